-- Monitoring: the figures every operator surface reads (pipeline/admin/status.py): `pipeline
-- status`, the dashboard's overview and the Prometheus collector. For the whole queue every
-- query reads the views of sql/migrations/0006_monitoring.sql, whose names are the stable
-- interface, so that a dashboard's own SQL and ours say the same thing.
--
-- %(tenant)s NULL means every tenant; set, every statement matches it, so a read scoped to one
-- tenant (a dashboard's tenant token) shows nothing of another. The views that count per stage
-- have no tenant to filter on: for one tenant, monitoring_tenant_* spell the same figures over
-- the same windows from the hot table, each arm through the partial index its view uses, and
-- from the tenant's rollups of finished jobs (pipeline.tenant_finished_by_minute).

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
-- tenant's jobs alone. Queued and running jobs from the hot table, one arm per partial index
-- (queued through jobs_ready: "tenant_id = T" implies its "tenant_id IS NOT NULL"; running
-- through jobs_running); finished ones from the tenant's rollups of the last day
-- (tenant_finished_by_minute, by its primary key), over the views' windows of whole minutes.
-- A stage is listed as the views list it: anything queued or running, or failed or done within
-- the day (not only cancelled).
WITH hot AS (
    SELECT type AS stage,
           count(*) FILTER (WHERE status = 'queued') AS queued,
           count(*) FILTER (WHERE status = 'queued' AND run_after <= now()) AS ready,
           count(*) FILTER (WHERE status = 'running') AS running,
           count(*) FILTER (WHERE status = 'running' AND leased_until < now()) AS expired_leases,
           min(run_after) FILTER (WHERE status = 'queued' AND run_after <= now()) AS oldest_ready
    FROM (
        SELECT type, status, run_after, leased_until FROM pipeline.active_jobs
        WHERE status = 'queued' AND tenant_id = %(tenant)s
        UNION ALL
        SELECT type, status, run_after, leased_until FROM pipeline.active_jobs
        WHERE status = 'running' AND tenant_id = %(tenant)s
    ) AS j
    GROUP BY type
),
finished AS (
    SELECT stage,
           sum(jobs) FILTER (WHERE status = 'failed' AND last_hour) AS failed_1h,
           sum(jobs) FILTER (WHERE status = 'failed') AS failed_24h,
           sum(jobs) FILTER (WHERE status = 'done' AND last_hour) AS completed_1h,
           sum(attempts) FILTER (WHERE status = 'done' AND last_hour) AS attempts_1h,
           max(max_attempts) FILTER (WHERE status = 'done' AND last_hour) AS max_attempts_1h,
           sum(jobs) FILTER (WHERE status = 'done') AS completed_24h,
           sum(attempts) FILTER (WHERE status = 'done') AS attempts_24h,
           max(max_attempts) FILTER (WHERE status = 'done') AS max_attempts_24h,
           pipeline.histogram_sum(run_hist) FILTER (WHERE status = 'done' AND last_hour)
               AS run_hist,
           min(min_run_s) FILTER (WHERE status = 'done' AND last_hour) AS min_s,
           max(max_run_s) FILTER (WHERE status = 'done' AND last_hour) AS max_s
    FROM (
        SELECT stage, status, jobs, attempts, max_attempts, run_hist, min_run_s, max_run_s,
               minute >= date_trunc('minute', now()) - interval '59 minutes' AS last_hour
        FROM pipeline.tenant_finished_by_minute
        WHERE tenant_id = %(tenant)s
          AND minute >= date_trunc('minute', now()) - interval '1439 minutes'
    ) AS r
    GROUP BY stage
)
SELECT coalesce(h.stage, f.stage) AS stage,
       coalesce(h.queued, 0) AS queued,
       coalesce(h.ready, 0) AS ready,
       coalesce(h.running, 0) AS running,
       coalesce(h.expired_leases, 0) AS expired_leases,
       extract(epoch FROM now() - h.oldest_ready)::double precision AS oldest_ready_age_s,
       coalesce(f.failed_1h, 0)::bigint AS failed_1h,
       coalesce(f.failed_24h, 0)::bigint AS failed_24h,
       coalesce(f.completed_1h, 0)::bigint AS completed_1h,
       (f.attempts_1h / nullif(f.completed_1h, 0))::double precision AS avg_attempts_1h,
       f.max_attempts_1h,
       coalesce(f.completed_24h, 0)::bigint AS completed_24h,
       (f.attempts_24h / nullif(f.completed_24h, 0))::double precision AS avg_attempts_24h,
       f.max_attempts_24h,
       pipeline.histogram_quantile(f.run_hist, 0.5, f.min_s, f.max_s) AS p50_s,
       pipeline.histogram_quantile(f.run_hist, 0.95, f.min_s, f.max_s) AS p95_s,
       f.max_s
FROM hot AS h
FULL JOIN finished AS f ON f.stage = h.stage
WHERE h.stage IS NOT NULL OR f.failed_24h > 0 OR f.completed_24h > 0
ORDER BY 1;

-- name: monitoring_failures_hourly
SELECT stage, hour, failed FROM pipeline.failures_hourly ORDER BY hour, stage;

-- name: monitoring_tenant_failures_hourly
-- monitoring_failures_hourly for one tenant: the body of pipeline.failures_hourly over the
-- tenant's rollups.
SELECT stage, date_trunc('hour', minute) AS hour, sum(jobs)::bigint AS failed
FROM pipeline.tenant_finished_by_minute
WHERE tenant_id = %(tenant)s AND status = 'failed'
  AND minute >= date_trunc('hour', now()) - interval '23 hours'
GROUP BY stage, date_trunc('hour', minute)
HAVING sum(jobs) > 0
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
-- Jobs finished per minute over the last hour (the current minute and the 59 before it), done
-- and failed, for the overview's chart: from the rollups, the whole queue's or the tenant's,
-- sixty minutes of a few rows each however many jobs finished in them.
SELECT minute,
       coalesce(sum(jobs) FILTER (WHERE status = 'done'), 0)::bigint AS done,
       coalesce(sum(jobs) FILTER (WHERE status = 'failed'), 0)::bigint AS failed
FROM (
    SELECT minute, status, jobs FROM pipeline.finished_by_minute
    WHERE %(tenant)s::text IS NULL
      AND minute >= date_trunc('minute', now()) - interval '59 minutes'
    UNION ALL
    SELECT minute, status, jobs FROM pipeline.tenant_finished_by_minute
    WHERE tenant_id = %(tenant)s
      AND minute >= date_trunc('minute', now()) - interval '59 minutes'
) AS r
GROUP BY minute
HAVING sum(jobs) > 0
ORDER BY minute
LIMIT 60;

-- name: monitoring_worker_stages
-- What each live worker runs now: its running jobs per stage, through jobs_running.
SELECT worker_id, type AS stage, count(*) AS running
FROM pipeline.jobs
WHERE status = 'running' AND worker_id = ANY(%(workers)s::uuid[])
GROUP BY worker_id, type
ORDER BY worker_id, type
LIMIT %(limit)s;
