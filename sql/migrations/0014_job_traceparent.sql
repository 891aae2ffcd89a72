-- The W3C traceparent of the OpenTelemetry span current when a job was enqueued
-- (pipeline/tracing.py), so that a worker that traces runs the job in a child span of the
-- enqueuing one, and the trace goes from the producer's transaction to the stage. On every
-- table a job moves through, last, as the moves copy it: NULL when nothing was traced.
ALTER TABLE pipeline.active_jobs ADD COLUMN traceparent text;
ALTER TABLE pipeline.job_history ADD COLUMN traceparent text;
ALTER TABLE pipeline.job_history_kept ADD COLUMN traceparent text;
-- A fan-out's next job, which the last child's trigger enqueues, as the job that fanned out.
ALTER TABLE pipeline.joins ADD COLUMN then_traceparent text;

-- A view keeps the columns it was made with: the new one joins them at the end.
CREATE OR REPLACE VIEW pipeline.jobs AS
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
       holds_slot, traceparent
FROM pipeline.active_jobs
UNION ALL
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
       holds_slot, traceparent
FROM pipeline.job_history
UNION ALL
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
       holds_slot, traceparent
FROM pipeline.job_history_kept;
