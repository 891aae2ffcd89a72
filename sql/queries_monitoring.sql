-- Monitoring: the figures every operator surface reads (pipeline/admin/status.py): `pipeline
-- status`, the dashboard's overview and the Prometheus collector. For the whole queue every
-- query reads the views of sql/migrations/0006_monitoring.sql, whose names are the stable
-- interface, so that a dashboard's own SQL and ours say the same thing.
--
-- %(tenant)s NULL means every tenant; set, every statement matches it, so a read scoped to one
-- tenant (a dashboard's tenant token) shows nothing of another. The views that count per stage
-- have no tenant to filter on: for one tenant, monitoring_tenant_* spell the same figures over
-- the same windows from the jobs table, each arm through the partial index its view uses.

-- name: monitoring_snapshot
-- First in a snapshot's transaction: one view of the data for every query that follows, so
-- the figures agree with each other; and read-only, since a snapshot never writes.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;

-- name: monitoring_begin
-- Bounds a snapshot's cost: a scrape or a status call gives up rather than pile onto a
-- database that is already struggling. Local to the snapshot's transaction. now() is the
-- transaction's time, which every view of the snapshot measures ages against.
SELECT set_config('statement_timeout', %(timeout_ms)s, true), now();

-- name: monitoring_stages
-- One row per stage with anything queued, running, or finished in the last day. MATERIALIZED:
-- each view is computed once, though it is read both for the list of stages and for its figures.
WITH counts AS MATERIALIZED (SELECT * FROM pipeline.stage_counts),
     attempts AS MATERIALIZED (SELECT * FROM pipeline.attempts),
     stages AS (SELECT stage FROM counts UNION SELECT stage FROM attempts)
SELECT s.stage,
       coalesce(c.queued, 0) AS queued,
       coalesce(r.ready, 0) AS ready,
       coalesce(c.running, 0) AS running,
       coalesce(e.expired, 0) AS expired_leases,
       r.oldest_age_s,
       coalesce(c.failed_1h, 0) AS failed_1h,
       coalesce(c.failed_24h, 0) AS failed_24h,
       coalesce(a.completed_1h, 0) AS completed_1h,
       a.avg_attempts_1h,
       a.max_attempts_1h,
       coalesce(a.completed_24h, 0) AS completed_24h,
       a.avg_attempts_24h,
       a.max_attempts_24h,
       d.p50_s,
       d.p95_s,
       d.max_s
FROM stages s
LEFT JOIN counts c ON c.stage = s.stage
LEFT JOIN attempts a ON a.stage = s.stage
LEFT JOIN pipeline.oldest_ready r ON r.stage = s.stage
LEFT JOIN pipeline.durations d ON d.stage = s.stage
LEFT JOIN (SELECT stage, count(*) AS expired FROM pipeline.expired_leases GROUP BY stage) AS e
       ON e.stage = s.stage
ORDER BY s.stage;

-- name: monitoring_tenant_stages
-- monitoring_stages for one tenant: its columns, as pipeline.stage_counts, pipeline.oldest_ready,
-- pipeline.attempts, pipeline.durations and pipeline.expired_leases count them, over the
-- tenant's jobs alone. Three arms, one per partial index: queued rows through jobs_ready
-- ("tenant_id = T" implies its "tenant_id IS NOT NULL"), running ones through jobs_running, the
-- last day's finished ones through jobs_finished. A stage is listed as the views list it:
-- anything queued or running, or failed or done within the day (not only cancelled).
SELECT type AS stage,
       count(*) FILTER (WHERE status = 'queued') AS queued,
       count(*) FILTER (WHERE status = 'queued' AND run_after <= now()) AS ready,
       count(*) FILTER (WHERE status = 'running') AS running,
       count(*) FILTER (WHERE status = 'running' AND leased_until < now()) AS expired_leases,
       extract(epoch FROM now() - min(run_after) FILTER (WHERE status = 'queued'
                                                           AND run_after <= now()))::double precision
           AS oldest_ready_age_s,
       count(*) FILTER (WHERE status = 'failed' AND last_hour) AS failed_1h,
       count(*) FILTER (WHERE status = 'failed') AS failed_24h,
       count(*) FILTER (WHERE status = 'done' AND last_hour) AS completed_1h,
       (avg(attempts) FILTER (WHERE status = 'done' AND last_hour))::double precision
           AS avg_attempts_1h,
       max(attempts) FILTER (WHERE status = 'done' AND last_hour) AS max_attempts_1h,
       count(*) FILTER (WHERE status = 'done') AS completed_24h,
       (avg(attempts) FILTER (WHERE status = 'done'))::double precision AS avg_attempts_24h,
       max(attempts) FILTER (WHERE status = 'done') AS max_attempts_24h,
       -- run_s is NULL but for the last hour's done jobs, and these aggregates skip NULLs
       percentile_cont(0.5) WITHIN GROUP (ORDER BY run_s) AS p50_s,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY run_s) AS p95_s,
       max(run_s) AS max_s
FROM (
    SELECT type, status, run_after, leased_until, attempts,
           false AS last_hour, NULL::double precision AS run_s
    FROM pipeline.jobs
    WHERE status = 'queued' AND tenant_id = %(tenant)s
    UNION ALL
    SELECT type, status, run_after, leased_until, attempts, false, NULL
    FROM pipeline.jobs
    WHERE status = 'running' AND tenant_id = %(tenant)s
    UNION ALL
    SELECT type, status, run_after, leased_until, attempts,
           finished_at >= now() - interval '1 hour',
           CASE WHEN status = 'done' AND finished_at >= now() - interval '1 hour'
                THEN extract(epoch FROM finished_at - started_at)::double precision END
    FROM pipeline.jobs
    WHERE status IN ('done', 'failed', 'cancelled') AND finished_at >= now() - interval '24 hours'
      AND tenant_id = %(tenant)s
) AS j
GROUP BY type
HAVING count(*) FILTER (WHERE status <> 'cancelled') > 0
ORDER BY type;

-- name: monitoring_failures_hourly
SELECT stage, hour, failed FROM pipeline.failures_hourly ORDER BY hour, stage;

-- name: monitoring_tenant_failures_hourly
-- monitoring_failures_hourly for one tenant: the body of pipeline.failures_hourly, filtered.
SELECT type AS stage, date_trunc('hour', finished_at) AS hour, count(*) AS failed
FROM pipeline.jobs
WHERE status = 'failed' AND finished_at >= date_trunc('hour', now()) - interval '23 hours'
  AND tenant_id = %(tenant)s
GROUP BY type, date_trunc('hour', finished_at)
ORDER BY hour, stage;

-- name: monitoring_expired_leases
-- The longest expired first; total says how many there are beyond the limit.
SELECT id, stage, tenant_id, worker_id, attempts, max_attempts, leased_until, expired_for_s,
       count(*) OVER () AS total
FROM pipeline.expired_leases
WHERE (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
ORDER BY leased_until, id
LIMIT %(limit)s;

-- name: monitoring_tenant_load
-- Closest to its cap first (fewest free slots), then the pairs capped by a default the
-- database cannot see, busiest first. total counts every row beyond the limit.
SELECT tenant_id, stage, cap, running, queued, count(*) OVER () AS total
FROM pipeline.tenant_load
WHERE (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
ORDER BY cap IS NULL, free, running DESC, tenant_id, stage
LIMIT %(limit)s;

-- name: monitoring_workers
-- Every live worker: workers serve every tenant, so a read scoped to one tenant lists none.
SELECT id, hostname, pid, stages, concurrency, started_at, last_seen, seen_ago_s, in_flight
FROM pipeline.live_workers
ORDER BY started_at, id;

-- name: metrics_tenant_load
-- A label per tenant would let one busy tenant list grow a series per customer: the top
-- tenants by running jobs keep theirs, the rest are summed per stage under tenant NULL
-- (exported as "other"). cap is a named row's own; "other" has none, a sum of caps would
-- mean nothing.
WITH ranked AS (
    SELECT tenant_id, stage, running, cap,
           row_number() OVER (ORDER BY running DESC, cap NULLS LAST, tenant_id, stage) AS rank
    FROM pipeline.tenant_load
)
SELECT CASE WHEN rank <= %(top)s THEN tenant_id END AS tenant_id,
       stage,
       sum(running)::bigint AS running,
       CASE WHEN bool_and(rank <= %(top)s) THEN max(cap) END AS cap
FROM ranked
GROUP BY 1, 2
ORDER BY 1 NULLS LAST, 2;

-- name: monitoring_schedules
-- Unpaused schedules soonest (most overdue) first, then the paused ones. total counts every
-- schedule beyond the limit.
SELECT name, stage, tenant_id, cron, every_s, timezone, paused, next_fire_at, due_in_s,
       last_fired_at, last_job_id, last_error, count(*) OVER () AS total
FROM pipeline.schedule_next
WHERE (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
ORDER BY paused, next_fire_at, name
LIMIT %(limit)s;

-- name: monitoring_throughput
-- Jobs finished per minute over the last hour, done and failed, for the overview's chart.
-- Through jobs_finished: the last hour's rows alone, however many finished before.
SELECT date_trunc('minute', finished_at) AS minute,
       count(*) FILTER (WHERE status = 'done') AS done,
       count(*) FILTER (WHERE status = 'failed') AS failed
FROM pipeline.jobs
WHERE status IN ('done', 'failed', 'cancelled') AND finished_at >= now() - interval '1 hour'
  AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
GROUP BY 1
ORDER BY 1
LIMIT 61;

-- name: monitoring_worker_stages
-- What each live worker runs now: its running jobs per stage, through jobs_running.
SELECT worker_id, type AS stage, count(*) AS running
FROM pipeline.jobs
WHERE status = 'running' AND worker_id = ANY(%(workers)s::uuid[])
GROUP BY worker_id, type
ORDER BY worker_id, type
LIMIT %(limit)s;
