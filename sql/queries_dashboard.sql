-- The web dashboard (pipeline/dashboard/). What pipeline/admin/* already reads (the status
-- snapshot, one job, retries, cancels, tenant caps) it reads through those functions; these are
-- the rest. Every statement is bounded: a LIMIT, and filters that reach an index, so a page
-- costs the same over ten finished rows or a million. %(tenant)s NULL means every tenant; set,
-- every statement matches it, so a dashboard opened for one tenant shows nothing of another.

-- name: dashboard_tenant_stages
-- A tenant's own figures per stage, for an overview opened for one tenant (the monitoring views
-- are not per tenant). Three arms, one per partial index: queued rows through jobs_ready
-- ("tenant_id = T" implies its "tenant_id IS NOT NULL"), running ones through jobs_running,
-- the last hour's finished ones through jobs_finished.
SELECT type AS stage,
       count(*) FILTER (WHERE status = 'queued') AS queued,
       count(*) FILTER (WHERE status = 'running') AS running,
       count(*) FILTER (WHERE status = 'failed') AS failed_1h,
       count(*) FILTER (WHERE status = 'done') AS done_1h,
       extract(epoch FROM now() - min(run_after)
           FILTER (WHERE status = 'queued' AND run_after <= now()))::double precision
           AS oldest_ready_age_s,
       count(*) FILTER (WHERE status = 'running' AND leased_until < now()) AS expired_leases
FROM (
    SELECT type, status, run_after, leased_until FROM jobs
    WHERE status = 'queued' AND tenant_id = %(tenant)s
    UNION ALL
    SELECT type, status, run_after, leased_until FROM jobs
    WHERE status = 'running' AND tenant_id = %(tenant)s
    UNION ALL
    SELECT type, status, run_after, leased_until FROM jobs
    WHERE status IN ('done', 'failed', 'cancelled') AND finished_at >= now() - interval '1 hour'
      AND tenant_id = %(tenant)s
) AS j
GROUP BY type
ORDER BY type
LIMIT %(limit)s;

-- name: dashboard_tenant_expired
SELECT id, stage, tenant_id, worker_id, attempts, max_attempts, leased_until, expired_for_s
FROM pipeline_expired_leases
WHERE tenant_id = %(tenant)s
ORDER BY leased_until, id
LIMIT %(limit)s;

-- name: dashboard_tenant_schedules
SELECT name, stage, tenant_id, cron, every_s, timezone, paused, next_fire_at, due_in_s,
       last_fired_at, last_job_id, last_error
FROM pipeline_schedule_next
WHERE tenant_id = %(tenant)s
ORDER BY paused, next_fire_at, name
LIMIT %(limit)s;

-- name: dashboard_schedule_tenant
-- Whose schedule it is, before a pause or resume from a dashboard opened for one tenant.
SELECT tenant_id FROM pipeline_schedules WHERE name = %(name)s;

-- name: dashboard_throughput
-- Jobs finished per minute over the last hour, done and failed, for the overview's chart.
-- Through jobs_finished: the last hour's rows alone, however many finished before.
SELECT date_trunc('minute', finished_at) AS minute,
       count(*) FILTER (WHERE status = 'done') AS done,
       count(*) FILTER (WHERE status = 'failed') AS failed
FROM jobs
WHERE status IN ('done', 'failed', 'cancelled') AND finished_at >= now() - interval '1 hour'
  AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
GROUP BY 1
ORDER BY 1
LIMIT 61;

-- name: dashboard_worker_jobs
-- What each live worker runs now: its running jobs per stage, through jobs_running.
SELECT worker_id, type AS stage, count(*) AS running
FROM jobs
WHERE status = 'running' AND worker_id = ANY(%(workers)s::uuid[])
GROUP BY worker_id, type
ORDER BY worker_id, type
LIMIT %(limit)s;

-- name: dashboard_jobs
-- The jobs table, newest first, keyset-paged by id (before: the smallest id of the newer page;
-- no OFFSET, which would read every skipped row). Each filter reaches an index of its own:
-- tenant jobs_tenant, failed/cancelled jobs_failed, running jobs_running, a time range the BRIN
-- index jobs_created; with none, the primary key reads `limit` rows. Queued rows are in two
-- partial indexes, tenanted or not, and "status = 'queued'" alone implies neither predicate:
-- the always-true "tenant_id IS NOT NULL OR tenant_id IS NULL" lets the planner OR the two
-- (BitmapOr) and sort the backlog, or walk the primary key back when the backlog is large.
-- A stage alone has no index of its own and walks the primary key back: fast while the stage
-- is common among recent jobs, and the statement_timeout of the page's snapshot bounds it
-- otherwise. The text search in last_error is dashboard_jobs_search, except among queued or
-- running jobs, whose indexes bound it here. Parameters are typed so that each NULL folds away
-- when the statement is planned for its values.
SELECT id, type, tenant_id, status, attempts, max_attempts, created_at, finished_at, last_error
FROM jobs
WHERE (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(status)s::text IS DISTINCT FROM 'queued' OR tenant_id IS NOT NULL OR tenant_id IS NULL)
  AND (%(stage)s::text IS NULL OR type = %(stage)s)
  AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
  AND (%(search)s::text IS NULL OR last_error ILIKE %(search)s)
  AND (%(before)s::bigint IS NULL OR id < %(before)s)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: dashboard_jobs_newer
-- dashboard_jobs the other way: the `limit` matches just above `after` (the largest id of the
-- older page), oldest first, for the "newer" link. Keep its filters as dashboard_jobs's.
SELECT id, type, tenant_id, status, attempts, max_attempts, created_at, finished_at, last_error
FROM jobs
WHERE (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(status)s::text IS DISTINCT FROM 'queued' OR tenant_id IS NOT NULL OR tenant_id IS NULL)
  AND (%(stage)s::text IS NULL OR type = %(stage)s)
  AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
  AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
  AND (%(search)s::text IS NULL OR last_error ILIKE %(search)s)
  AND id > %(after)s
ORDER BY id
LIMIT %(limit)s;

-- name: dashboard_jobs_search
-- The text search in last_error among failed and cancelled jobs, bounded: it reads the newest
-- %(window)s of them (of the tenant) below `before`, through jobs_failed, and matches within
-- those. No index serves a substring ILIKE (a trigram index would, at a write cost on the hot
-- table), and a walk of the whole table would take seconds on millions of rows; the page says
-- how far it read, and its "older" link continues below the window. One more row is read to
-- tell whether there is anything below it. One row even when nothing matches: the window's
-- size, ids and whether more lie beyond, with the job columns NULL.
WITH win AS MATERIALIZED (
    SELECT id, type, tenant_id, status, attempts, max_attempts, created_at, finished_at,
           last_error, row_number() OVER (ORDER BY id DESC) AS rn
    FROM jobs
    WHERE status IN ('failed', 'cancelled')
      AND (%(status)s::text IS NULL OR status = %(status)s)
      AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
      AND (%(before)s::bigint IS NULL OR id < %(before)s)
    ORDER BY id DESC
    LIMIT %(window)s + 1  -- one more: is there anything beyond the window?
), edge AS (
    SELECT count(*) FILTER (WHERE rn <= %(window)s) AS n,
           min(id) FILTER (WHERE rn <= %(window)s) AS low,
           max(id) FILTER (WHERE rn <= %(window)s) AS high,
           count(*) > %(window)s AS more
    FROM win
)
SELECT m.id, m.type, m.tenant_id, m.status, m.attempts, m.max_attempts, m.created_at,
       m.finished_at, m.last_error, edge.n, edge.low, edge.high, edge.more
FROM edge
LEFT JOIN LATERAL (
    SELECT * FROM win
    WHERE rn <= %(window)s AND last_error ILIKE %(search)s
      AND (%(stage)s::text IS NULL OR type = %(stage)s)
      AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
      AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
    ORDER BY id DESC
    LIMIT %(limit)s
) AS m ON true
ORDER BY m.id DESC;

-- name: dashboard_jobs_search_newer
-- dashboard_jobs_search the other way: the window is the %(window)s failed or cancelled jobs
-- just above `after`, the matches oldest first. Keep its filters as dashboard_jobs_search's.
WITH win AS MATERIALIZED (
    SELECT id, type, tenant_id, status, attempts, max_attempts, created_at, finished_at,
           last_error, row_number() OVER (ORDER BY id) AS rn
    FROM jobs
    WHERE status IN ('failed', 'cancelled')
      AND (%(status)s::text IS NULL OR status = %(status)s)
      AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
      AND id > %(after)s
    ORDER BY id
    LIMIT %(window)s + 1  -- one more: is there anything beyond the window?
), edge AS (
    SELECT count(*) FILTER (WHERE rn <= %(window)s) AS n,
           min(id) FILTER (WHERE rn <= %(window)s) AS low,
           max(id) FILTER (WHERE rn <= %(window)s) AS high,
           count(*) > %(window)s AS more
    FROM win
)
SELECT m.id, m.type, m.tenant_id, m.status, m.attempts, m.max_attempts, m.created_at,
       m.finished_at, m.last_error, edge.n, edge.low, edge.high, edge.more
FROM edge
LEFT JOIN LATERAL (
    SELECT * FROM win
    WHERE rn <= %(window)s AND last_error ILIKE %(search)s
      AND (%(stage)s::text IS NULL OR type = %(stage)s)
      AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
      AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
    ORDER BY id
    LIMIT %(limit)s
) AS m ON true
ORDER BY m.id;

-- name: dashboard_runs
-- The newest runs (root jobs with descendants), found by skipping down jobs_run one root at a
-- time: a run of 400 pages costs one index probe, not 400 rows. At most %(probes)s probes, so
-- a tenant with few runs among many cannot make it walk the whole index.
WITH RECURSIVE roots(root_id, n) AS (
    SELECT (SELECT max(root_id) FROM jobs WHERE root_id IS NOT NULL
              AND (%(before)s::bigint IS NULL OR root_id < %(before)s)), 1
    UNION ALL
    SELECT (SELECT max(j.root_id) FROM jobs j
            WHERE j.root_id IS NOT NULL AND j.root_id < r.root_id), r.n + 1
    FROM roots r
    WHERE r.root_id IS NOT NULL AND r.n < %(probes)s
)
SELECT j.id, j.type, j.tenant_id, j.status, j.created_at, j.finished_at,
       p.total, p.done, p.failed
FROM roots r
JOIN jobs j ON j.id = r.root_id
CROSS JOIN LATERAL (
    SELECT count(*) AS total,
           count(*) FILTER (WHERE d.status = 'done') AS done,
           count(*) FILTER (WHERE d.status IN ('failed', 'cancelled')) AS failed
    FROM jobs d WHERE d.root_id = r.root_id
      AND (%(tenant)s::text IS NULL OR d.tenant_id = %(tenant)s)
) AS p
WHERE (%(tenant)s::text IS NULL OR j.tenant_id = %(tenant)s)
ORDER BY j.id DESC
LIMIT %(limit)s;

-- name: dashboard_run_jobs
-- Every job of one run in id order (the order a fan-out enqueued its pages), through the
-- primary key and jobs_run. total: how many there are beyond the limit.
SELECT id, type, tenant_id, status, attempts, max_attempts, parent_id, last_error,
       created_at, started_at, finished_at, count(*) OVER () AS total
FROM jobs
WHERE (id = %(run_id)s OR root_id = %(run_id)s)
  AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
ORDER BY id
LIMIT %(limit)s;

-- name: dashboard_run_outputs
-- The outputs of a run's single jobs (part NULL: not the pages of a fan-out, whose text is
-- large and shown per page), through job_outputs_run.
SELECT o.stage, o.job_id, o.output
FROM job_outputs o
JOIN jobs j ON j.id = o.job_id
WHERE o.root_id = %(run_id)s AND o.part IS NULL
  AND (%(tenant)s::text IS NULL OR j.tenant_id = %(tenant)s)
ORDER BY o.job_id
LIMIT %(limit)s;

-- name: dashboard_tenant_queued
-- Queued jobs per tenant, the longest backlog first: reads the queued rows through jobs_ready,
-- as pipeline_stage_counts does, so it costs the backlog, never the finished rows.
SELECT tenant_id, count(*) AS queued
FROM jobs
WHERE status = 'queued' AND tenant_id IS NOT NULL
  AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
GROUP BY tenant_id
ORDER BY queued DESC, tenant_id
LIMIT %(limit)s;

-- name: dashboard_noisy_tenants
-- The tenants that enqueued most in the last hour, with how many of those jobs failed: the
-- BRIN index jobs_created reads the last hour's blocks alone.
SELECT tenant_id,
       count(*) AS enqueued_1h,
       count(*) FILTER (WHERE status = 'failed') AS failed_1h,
       count(*) FILTER (WHERE status IN ('queued', 'running')) AS pending
FROM jobs
WHERE created_at >= now() - interval '1 hour' AND tenant_id IS NOT NULL
  AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
GROUP BY tenant_id
ORDER BY enqueued_1h DESC, tenant_id
LIMIT %(limit)s;

-- name: dashboard_job_exists
-- Before a confirmation page: the job is there, for this tenant. By the primary key.
SELECT 1 FROM jobs
WHERE id = %(id)s AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s);
