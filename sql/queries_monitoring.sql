-- Monitoring: what `pipeline status` and the Prometheus collector read. Every query reads the
-- views of sql/migrations/0006_monitoring.sql, whose names are the stable interface, so that a
-- dashboard's own SQL and ours say the same thing.

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
WITH counts AS MATERIALIZED (SELECT * FROM pipeline_stage_counts),
     attempts AS MATERIALIZED (SELECT * FROM pipeline_attempts),
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
LEFT JOIN pipeline_oldest_ready r ON r.stage = s.stage
LEFT JOIN pipeline_durations d ON d.stage = s.stage
LEFT JOIN (SELECT stage, count(*) AS expired FROM pipeline_expired_leases GROUP BY stage) AS e
       ON e.stage = s.stage
ORDER BY s.stage;

-- name: monitoring_failures_hourly
SELECT stage, hour, failed FROM pipeline_failures_hourly ORDER BY hour, stage;

-- name: monitoring_expired_leases
-- The longest expired first; total says how many there are beyond the limit.
SELECT id, stage, tenant_id, worker_id, attempts, max_attempts, leased_until, expired_for_s,
       count(*) OVER () AS total
FROM pipeline_expired_leases
ORDER BY leased_until, id
LIMIT %(limit)s;

-- name: monitoring_tenant_load
-- Closest to its cap first (fewest free slots), then the pairs capped by a default the
-- database cannot see, busiest first. total counts every row beyond the limit.
SELECT tenant_id, stage, running, cap, queued, count(*) OVER () AS total
FROM pipeline_tenant_load
ORDER BY cap IS NULL, free, running DESC, tenant_id, stage
LIMIT %(limit)s;

-- name: monitoring_workers
SELECT id, hostname, pid, stages, concurrency, started_at, last_seen, seen_ago_s, in_flight
FROM pipeline_live_workers
ORDER BY started_at, id;

-- name: metrics_tenant_load
-- A label per tenant would let one busy tenant list grow a series per customer: the top
-- tenants by running jobs keep theirs, the rest are summed per stage under tenant NULL
-- (exported as "other"). cap is a named row's own; "other" has none, a sum of caps would
-- mean nothing.
WITH ranked AS (
    SELECT tenant_id, stage, running, cap,
           row_number() OVER (ORDER BY running DESC, cap NULLS LAST, tenant_id, stage) AS rank
    FROM pipeline_tenant_load
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
FROM pipeline_schedule_next
ORDER BY paused, next_fire_at, name
LIMIT %(limit)s;
