-- Monitoring views: stable names that `pipeline status`, the Prometheus collector and anyone's
-- own SQL read. Each one reads only rows that a partial index already picks out (queued rows
-- through jobs_ready and jobs_ready_untenanted, running rows through jobs_running, finished rows
-- of a recent window through jobs_finished), so its cost follows the queue's backlog, its
-- running jobs and its recent throughput, never the millions of finished rows behind them. Each
-- statement spells out the very predicate of the index it relies on: a partial index is only
-- used when the planner can prove the query's WHERE implies the index's.

-- Ready jobs (queued, run_after reached) per stage, and how long the oldest has waited.
CREATE VIEW pipeline_oldest_ready AS
SELECT r.type AS stage,
       count(*) AS ready,
       min(r.run_after) AS oldest_run_after,
       extract(epoch FROM now() - min(r.run_after))::double precision AS oldest_age_s
FROM (
    -- Two arms, one per ready index: "status = 'queued'" alone implies neither predicate.
    SELECT type, run_after FROM jobs
    WHERE status = 'queued' AND tenant_id IS NOT NULL AND run_after <= now()
    UNION ALL
    SELECT type, run_after FROM jobs
    WHERE status = 'queued' AND tenant_id IS NULL AND run_after <= now()
) AS r
GROUP BY r.type;
COMMENT ON VIEW pipeline_oldest_ready IS
    'Per stage: ready jobs (queued, run_after reached) and the age in seconds of the oldest.';

-- Failed jobs per stage and clock hour, over the current hour and the 23 before it. Hours
-- without a failure have no row.
CREATE VIEW pipeline_failures_hourly AS
SELECT type AS stage, date_trunc('hour', finished_at) AS hour, count(*) AS failed
FROM jobs
WHERE status = 'failed'
  AND finished_at >= date_trunc('hour', now()) - interval '23 hours'
GROUP BY type, date_trunc('hour', finished_at);
COMMENT ON VIEW pipeline_failures_hourly IS
    'Failed jobs per stage and clock hour, the current hour and the 23 before it; hours '
    'without failures have no row.';

-- Running jobs whose lease ran out: their worker died or stalled, and reclaim (every 30 s in
-- every worker) has not reached them yet. Many rows here, for long, means no worker reclaims.
CREATE VIEW pipeline_expired_leases AS
SELECT id, type AS stage, tenant_id, worker_id, attempts, max_attempts, leased_until,
       extract(epoch FROM now() - leased_until)::double precision AS expired_for_s
FROM jobs
WHERE status = 'running' AND leased_until < now();
COMMENT ON VIEW pipeline_expired_leases IS
    'Running jobs whose lease has expired (not reclaimed yet), with seconds since it did.';

-- Charged runs per completed job: 1.0 means first-time success. Refunded runs (crash reclaims,
-- shutdown releases) are not counted, as in jobs.attempts.
CREATE VIEW pipeline_attempts AS
SELECT type AS stage,
       count(*) FILTER (WHERE finished_at >= now() - interval '1 hour') AS completed_1h,
       (avg(attempts) FILTER (WHERE finished_at >= now() - interval '1 hour'))::double precision
           AS avg_attempts_1h,
       max(attempts) FILTER (WHERE finished_at >= now() - interval '1 hour') AS max_attempts_1h,
       count(*) AS completed_24h,
       avg(attempts)::double precision AS avg_attempts_24h,
       max(attempts) AS max_attempts_24h
FROM jobs
WHERE status = 'done' AND finished_at >= now() - interval '24 hours'
GROUP BY type;
COMMENT ON VIEW pipeline_attempts IS
    'Per stage: jobs completed in the last hour and day, and their charged attempts '
    '(average, most).';

-- How long the successful run of a job took (finished_at - started_at; started_at is set by
-- every claim, so earlier failed runs do not count), for jobs done in the last hour.
CREATE VIEW pipeline_durations AS
SELECT type AS stage,
       count(*) AS completed,
       percentile_cont(0.5) WITHIN GROUP (
           ORDER BY extract(epoch FROM finished_at - started_at))::double precision AS p50_s,
       percentile_cont(0.95) WITHIN GROUP (
           ORDER BY extract(epoch FROM finished_at - started_at))::double precision AS p95_s,
       max(extract(epoch FROM finished_at - started_at))::double precision AS max_s
FROM jobs
WHERE status = 'done' AND finished_at >= now() - interval '1 hour' AND started_at IS NOT NULL
GROUP BY type;
COMMENT ON VIEW pipeline_durations IS
    'Per stage: run time in seconds (p50, p95, max) of jobs done in the last hour.';

-- Queued (ready or not), running and recently failed jobs per stage. Finished jobs are counted
-- over a window only: an all-time count would read every finished row there is.
CREATE VIEW pipeline_stage_counts AS
SELECT p.stage,
       sum(p.queued)::bigint AS queued,
       sum(p.running)::bigint AS running,
       sum(p.failed_1h)::bigint AS failed_1h,
       sum(p.failed_24h)::bigint AS failed_24h
FROM (
    SELECT type AS stage, count(*) AS queued, 0 AS running, 0 AS failed_1h, 0 AS failed_24h
    FROM jobs WHERE status = 'queued' AND tenant_id IS NOT NULL GROUP BY type
    UNION ALL
    SELECT type, count(*), 0, 0, 0
    FROM jobs WHERE status = 'queued' AND tenant_id IS NULL GROUP BY type
    UNION ALL
    SELECT type, 0, count(*), 0, 0
    FROM jobs WHERE status = 'running' GROUP BY type
    UNION ALL
    SELECT type, 0, 0, count(*) FILTER (WHERE finished_at >= now() - interval '1 hour'), count(*)
    FROM jobs WHERE status = 'failed' AND finished_at >= now() - interval '24 hours'
    GROUP BY type
) AS p
GROUP BY p.stage;
COMMENT ON VIEW pipeline_stage_counts IS
    'Per stage: queued and running jobs now, failed jobs in the last hour and day.';

-- Running jobs against caps, per (tenant, stage), for the pairs the database knows to be
-- capped: an operator's cap in tenant_caps, or slots held now. A default cap (@stage(tenant_cap=)
-- or `pipeline worker --tenant-cap`) lives in the workers, not in the database: such a pair
-- shows up only while it holds slots, and with cap NULL. queued probes jobs_ready once per pair.
CREATE VIEW pipeline_tenant_load AS
SELECT k.tenant_id, k.stage, k.running, k.cap, k.cap - k.running AS free,
       (SELECT count(*) FROM jobs j
        WHERE j.status = 'queued' AND j.tenant_id = k.tenant_id AND j.type = k.stage) AS queued
FROM (
    SELECT coalesce(c.tenant_id, s.tenant_id) AS tenant_id,
           coalesce(c.stage, s.stage) AS stage,
           coalesce(s.running, 0) AS running,
           c.cap
    FROM tenant_caps c
    FULL JOIN tenant_slots s ON s.tenant_id = c.tenant_id AND s.stage = c.stage
    WHERE c.cap IS NOT NULL OR s.running > 0
) AS k;
COMMENT ON VIEW pipeline_tenant_load IS
    'Per capped (tenant, stage): jobs holding a slot, the cap from tenant_caps and queued jobs; '
    'cap is NULL when it is a default that only the workers hold.';

-- Workers that beat within 180 s (three beats at the default 60 s heartbeat), with the jobs
-- they hold. A worker that stops beating drops out of here; the pruner deletes its row later.
CREATE VIEW pipeline_live_workers AS
SELECT w.id, w.hostname, w.pid, w.stages, w.concurrency, w.started_at, w.last_seen,
       extract(epoch FROM now() - w.last_seen)::double precision AS seen_ago_s,
       coalesce(f.in_flight, 0) AS in_flight
FROM pipeline_workers w
LEFT JOIN (
    SELECT worker_id, count(*) AS in_flight FROM jobs
    WHERE status = 'running' GROUP BY worker_id
) AS f ON f.worker_id = w.id
WHERE w.last_seen > now() - interval '180 seconds';
COMMENT ON VIEW pipeline_live_workers IS
    'Workers whose heartbeat is at most 180 s old, with the running jobs each one holds.';

-- Schedules (0005) with their next fire time: due_in_s is negative once that time has passed and
-- no scheduler has fired it yet (a long negative one means no worker runs the scheduler).
CREATE VIEW pipeline_schedule_next AS
SELECT name, stage, tenant_id, cron, every_s, timezone, paused, next_fire_at,
       extract(epoch FROM next_fire_at - now())::double precision AS due_in_s,
       last_fired_at, last_job_id, last_error
FROM pipeline_schedules;
COMMENT ON VIEW pipeline_schedule_next IS
    'Every schedule with its next fire time and seconds until it (negative: due, not fired yet).';
