-- What operators read and change, job by job: `pipeline jobs` and the dashboard's job, run and
-- action pages (pipeline/admin/jobs.py, runs.py, schedules.py), and retention, `pipeline prune`
-- and the worker's Pruner (pipeline/maintenance/retention.py).
--
-- A filter parameter that is NULL means "any". Each statement is planned for the values it is
-- given, which folds "NULL IS NULL OR ..." away, so every filter that is set still reaches its
-- index. Tenant scoping: every statement that reads or changes a job matches %(tenant)s when it
-- is set, so a caller scoped to one tenant neither sees nor touches another tenant's jobs; to
-- it, such a job does not exist. Every read is bounded (a LIMIT, and filters that reach an
-- index), so a page costs the same over ten finished rows or a million.

-- name: jobs_list
-- The jobs that match, newest first, keyset-paged by id (before: the smallest id of the newer
-- page; no OFFSET, which would read every skipped row); with `after` (the largest id of the
-- older page) the other way, the `limit` matches just above it, oldest first, for the "newer"
-- link: each order is the other's CASE folded to a constant when the statement is planned for
-- its values, a sort key that sorts nothing. Each filter reaches an index of its
-- own: tenant jobs_tenant, failed/cancelled jobs_failed, running jobs_running, a time range
-- (since_s: seconds back by the database's clock; since/until: times) the BRIN index
-- jobs_created (migration 0007); with none, the primary key reads `limit` rows. Queued rows are
-- in two partial indexes, tenanted or not, and "status = 'queued'" alone implies neither
-- predicate: the always-true "tenant_id IS NOT NULL OR tenant_id IS NULL" lets the planner OR
-- the two (BitmapOr) and sort the backlog, or walk the primary key back when the backlog is
-- large. A stage: the hot table's jobs of it by the primary key back (or jobs_ready), the
-- history's by its (type, id) index (migration 0032; stage_ids, the page's ids, then their
-- rows by id), so a page reads its rows whatever other stages ran: walking the id index back
-- passed every newer job of another stage (397-413 ms for `/jobs?stage=extract` at 100 M
-- finished jobs, 2.3 M of another stage newer). Its filters are those of the list, written
-- again there: its page must be the page's history rows, none left out. And the history only
-- through the days that may hold jobs of that stage or outcome: finished_from and
-- finished_to, from jobs_finished_span (read just before), bound the finish times, and
-- partition pruning leaves the other days out when the statement is planned (an outcome
-- alone, without a stage, walks the id index back within them).
-- The text search in last_error (%(search)s, an ILIKE pattern) is jobs_search among failed and
-- cancelled jobs; here only among queued or running ones, whose indexes bound it. Parameters
-- are typed so that each NULL folds away when the statement is planned for its values.
WITH stage_ids AS MATERIALIZED (
    -- With a stage: the history's ids of the page (its kept rows' too), by the (type, id) index.
    -- The range on type instead of an equality keeps type in the order, which that index alone
    -- gives: planned on statistics, the walk of the id index looked as cheap, the stage's jobs
    -- assumed spread evenly among the others.
    SELECT id
    FROM (SELECT id, type, tenant_id, status, created_at, finished_at, last_error
          FROM pipeline.job_history
          UNION ALL
          SELECT id, type, tenant_id, status, created_at, finished_at, last_error
          FROM pipeline.job_history_kept) AS finished
    WHERE %(stage)s::text IS NOT NULL
      AND type >= %(stage)s AND type <= %(stage)s
      AND (%(status)s::text IS NULL OR status = %(status)s)
      AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
      AND (%(since_s)s::float8 IS NULL
           OR created_at >= now() - make_interval(secs => %(since_s)s::float8))
      AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
      AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
      AND (%(since_s)s::float8 IS NULL
           OR finished_at >= now() - make_interval(secs => %(since_s)s::float8))
      AND (%(since)s::timestamptz IS NULL OR finished_at >= %(since)s)
      AND (%(search)s::text IS NULL OR last_error ILIKE %(search)s)
      AND (%(before)s::bigint IS NULL OR id < %(before)s)
      AND (%(after)s::bigint IS NULL OR id > %(after)s)
      AND (%(finished_from)s::timestamptz IS NULL
           OR finished_at >= %(finished_from)s AND finished_at < %(finished_to)s::timestamptz)
    ORDER BY CASE WHEN %(after)s::bigint IS NULL THEN type END DESC,
             CASE WHEN %(after)s::bigint IS NULL THEN id END DESC,
             CASE WHEN %(after)s::bigint IS NOT NULL THEN type END,
             CASE WHEN %(after)s::bigint IS NOT NULL THEN id END
    LIMIT %(limit)s
)
SELECT *
FROM ((SELECT id, type, tenant_id, status, attempts, max_attempts, created_at, finished_at,
              last_error
       FROM pipeline.jobs
       WHERE (%(status)s::text IS NULL OR status = %(status)s)
         AND (%(status)s::text IS DISTINCT FROM 'queued'
              OR tenant_id IS NOT NULL OR tenant_id IS NULL)
         AND (%(stage)s::text IS NULL OR type = %(stage)s)
         AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
         AND (%(since_s)s::float8 IS NULL
              OR created_at >= now() - make_interval(secs => %(since_s)s::float8))
         AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s)
         AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s)
         -- A job made since then finished since then: the history reads those days alone.
         AND (%(since_s)s::float8 IS NULL OR finished_at IS NULL
              OR finished_at >= now() - make_interval(secs => %(since_s)s::float8))
         AND (%(since)s::timestamptz IS NULL OR finished_at IS NULL OR finished_at >= %(since)s)
         AND (%(search)s::text IS NULL OR last_error ILIKE %(search)s)
         AND (%(before)s::bigint IS NULL OR id < %(before)s)
         AND (%(after)s::bigint IS NULL OR id > %(after)s)
         -- A stage or an outcome: the history's days that may hold one alone
         -- (jobs_finished_span).
         AND (%(finished_from)s::timestamptz IS NULL OR finished_at IS NULL
              OR finished_at >= %(finished_from)s AND finished_at < %(finished_to)s::timestamptz)
         -- With a stage: the hot table's rows here, the history's those of stage_ids below.
         AND (%(stage)s::text IS NULL OR finished_at IS NULL)
       ORDER BY CASE WHEN %(after)s::bigint IS NULL THEN id END DESC,
                CASE WHEN %(after)s::bigint IS NOT NULL THEN id END
       LIMIT %(limit)s)
      UNION ALL
      (SELECT id, type, tenant_id, status, attempts, max_attempts, created_at, finished_at,
              last_error
       FROM pipeline.jobs
       -- Without a stage, no arm at all: its days are not even planned.
       WHERE %(stage)s::text IS NOT NULL AND finished_at IS NOT NULL
         AND id = ANY (ARRAY(SELECT id FROM stage_ids))
         AND (%(finished_from)s::timestamptz IS NULL
              OR finished_at >= %(finished_from)s
                 AND finished_at < %(finished_to)s::timestamptz))) AS page
ORDER BY CASE WHEN %(after)s::bigint IS NULL THEN id END DESC,
         CASE WHEN %(after)s::bigint IS NOT NULL THEN id END
LIMIT %(limit)s;

-- name: jobs_finished_span
-- The finish times [lo, hi) a jobs list filtered by stage or outcome reads of the history
-- (functions/finished_span.sql), passed to jobs_list as finished_from and finished_to: values
-- its plan is made for, so that the days outside are pruned when it is planned, and no bound
-- is added when it would leave no day out (NULL). A job that finishes between the two
-- statements, of a stage with no finished job in that minute yet, may be missed by that page.
SELECT lo, hi FROM pipeline.finished_span(%(stage)s, %(status)s);

-- name: jobs_search
-- The text search in last_error among failed and cancelled jobs, bounded: it reads a window of
-- %(window)s of them (of the tenant) and matches within those: without `after`, the newest
-- below `before`, matches newest first; with `after` (the "newer" link) the window just above
-- it, matches oldest first. Each order is the other's CASE folded to a constant when the
-- statement is planned for its values, as in jobs_list (pipeline/admin/jobs.py runs it
-- unprepared): one statement for both ways, so that their filters cannot come apart. The
-- window is read through jobs_failed. No index serves a substring ILIKE (a trigram index
-- would, at a write cost on the hot table), and a walk of the whole table would take seconds
-- on millions of rows; the page says how far it read, and its link continues past the window.
-- One more row is read to tell whether there is anything beyond it. One row even when nothing
-- matches: the window's size, ids and whether more lie beyond, with the job columns NULL.
WITH win AS MATERIALIZED (
    SELECT id, type, tenant_id, status, attempts, max_attempts, created_at, finished_at,
           last_error,
           row_number() OVER (ORDER BY CASE WHEN %(after)s::bigint IS NULL THEN id END DESC,
                                       CASE WHEN %(after)s::bigint IS NOT NULL THEN id END) AS rn
    FROM pipeline.jobs
    WHERE status IN ('failed', 'cancelled')
      AND (%(status)s::text IS NULL OR status = %(status)s)
      AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
      AND (%(before)s::bigint IS NULL OR id < %(before)s)
      AND (%(after)s::bigint IS NULL OR id > %(after)s)
    ORDER BY CASE WHEN %(after)s::bigint IS NULL THEN id END DESC,
             CASE WHEN %(after)s::bigint IS NOT NULL THEN id END
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
    ORDER BY rn  -- the window's order: newest first, or oldest first with `after`
    LIMIT %(limit)s
) AS m ON true
ORDER BY m.rn;

-- name: stage_names
-- The stages a jobs filter offers: those workers recorded (pipeline.stages, a row per version)
-- and those with queued or running jobs, by name, at most %(limit)s. Queued stages are read by
-- a skip scan, a type at a time, down each of the two ready indexes (jobs_ready, tenanted, and
-- jobs_ready_untenanted, both led by type): one index probe per stage, however long the
-- backlog. Running jobs are jobs_running's few (the workers' concurrency). For a tenant, a
-- queued or running stage shows only when that tenant has such a job (an index probe per
-- stage, (type, tenant_id) of jobs_ready): the stages workers recorded are the application's,
-- the same for every tenant.
WITH RECURSIVE tenanted (type, n) AS (
    (SELECT type, 1 FROM pipeline.active_jobs
     WHERE status = 'queued' AND tenant_id IS NOT NULL ORDER BY type LIMIT 1)
    UNION ALL
    SELECT (SELECT j.type FROM pipeline.active_jobs AS j
            WHERE j.status = 'queued' AND j.tenant_id IS NOT NULL AND j.type > t.type
            ORDER BY j.type LIMIT 1), t.n + 1
    FROM tenanted AS t
    WHERE t.type IS NOT NULL AND t.n < %(limit)s
), untenanted (type, n) AS (
    (SELECT type, 1 FROM pipeline.active_jobs
     WHERE status = 'queued' AND tenant_id IS NULL ORDER BY type LIMIT 1)
    UNION ALL
    SELECT (SELECT j.type FROM pipeline.active_jobs AS j
            WHERE j.status = 'queued' AND j.tenant_id IS NULL AND j.type > u.type
            ORDER BY j.type LIMIT 1), u.n + 1
    FROM untenanted AS u
    WHERE u.type IS NOT NULL AND u.n < %(limit)s
)
SELECT name FROM (
    SELECT name FROM pipeline.stages
    UNION
    SELECT type FROM tenanted AS t
    WHERE t.type IS NOT NULL
      AND (%(tenant)s::text IS NULL
           OR EXISTS (SELECT FROM pipeline.active_jobs AS j
                      WHERE j.status = 'queued' AND j.tenant_id = %(tenant)s AND j.type = t.type))
    UNION
    SELECT type FROM untenanted WHERE type IS NOT NULL AND %(tenant)s::text IS NULL
    UNION
    SELECT type FROM pipeline.active_jobs
    WHERE status = 'running' AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
) AS known (name)
ORDER BY name
LIMIT %(limit)s;

-- name: job_get
SELECT id, type, tenant_id, status, priority, payload, attempts, max_attempts, claims,
       last_error, coalesce(root_id, id) AS run_id, parent_id, join_id, dedup_key,
       lease_seconds, leased_until, worker_id, suspect, crash_reclaims, releases,
       created_at, run_after, started_at, finished_at
FROM pipeline.jobs
WHERE id = %(id)s AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s);

-- name: job_attempts
-- A job's ended attempts, oldest first, by the primary key (job_id, claims). The running
-- attempt has no row yet (the job's row is it). duration_s: from the run's start, or from the
-- claim when the worker did not say when it started (a reclaim, a release, a cancel).
-- A done job's first and only claim without log lines has no row (sql/queries.sql, complete):
-- it is made here from the job's row.
SELECT attempt, claims, outcome, worker_id, claimed_at, started_at, ended_at,
       extract(epoch FROM ended_at - coalesce(started_at, claimed_at))::float8 AS duration_s,
       error, has_logs, logs_dropped
FROM (
    SELECT attempt, claims, outcome, worker_id, claimed_at, started_at, ended_at, error,
           logs IS NOT NULL AS has_logs, logs_dropped
    FROM pipeline.job_attempts
    WHERE job_id = %(id)s
    UNION ALL
    SELECT j.attempts, j.claims, 'done', j.worker_id, j.started_at, NULL, j.finished_at, NULL,
           false, 0
    FROM pipeline.jobs AS j
    WHERE j.id = %(id)s AND j.status = 'done'
      AND NOT EXISTS (SELECT FROM pipeline.job_attempts AS a
                      WHERE a.job_id = j.id AND a.claims = j.claims)
) AS a
ORDER BY claims;

-- name: job_logs
-- The lines each ended attempt of a job logged (a running one's are written when it ends).
-- As job_attempts: a done first claim that logged nothing has no row; it is made here.
SELECT attempt, claims, outcome, ended_at, logs, logs_dropped
FROM (
    SELECT attempt, claims, outcome, ended_at, logs, logs_dropped
    FROM pipeline.job_attempts
    WHERE job_id = %(id)s
    UNION ALL
    SELECT j.attempts, j.claims, 'done', j.finished_at, NULL, 0
    FROM pipeline.jobs AS j
    WHERE j.id = %(id)s AND j.status = 'done'
      AND NOT EXISTS (SELECT FROM pipeline.job_attempts AS a
                      WHERE a.job_id = j.id AND a.claims = j.claims)
) AS a
ORDER BY claims;

-- name: job_exists
-- Whether the job is there, for this tenant: before a change by id, and before the page that
-- asks to confirm one. By the primary key.
SELECT 1 FROM pipeline.jobs
WHERE id = %(id)s AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s);

-- name: job_children
-- Through jobs_parent. A fan-out can have thousands of children: their count, and the first
-- `limit` ids.
SELECT count(*), coalesce((array_agg(id ORDER BY id))[1:%(limit)s], '{}')
FROM pipeline.jobs
WHERE parent_id = %(id)s AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s);

-- name: runs_list
-- The newest runs, newest first: runs of more than one job from their stored status
-- (pipeline.runs, kept by sql/functions/count_runs.sql) through runs_pkey, or runs_status with
-- a status, or runs_tenant with a tenant, the root's stage by id; merged with the waiting jobs
-- alone in their run (no runs row: their run's status is their own), through jobs_waiting,
-- because a single approval job is the commonest durable wait and the status filter would
-- otherwise hide it. Single queued or running jobs are every standalone job, and single failed
-- ones live in the history: neither is listed (`pipeline jobs list` shows them).
(SELECT r.run_id, j.type, r.tenant_id, r.status, r.created_at, r.finished_at,
        r.active + r.done + r.failed + r.cancelled AS jobs, r.active, r.done, r.failed,
        r.cancelled, r.blocked_job_id, r.blocked_reason
 FROM pipeline.runs AS r
 LEFT JOIN LATERAL (SELECT type FROM pipeline.jobs WHERE id = r.run_id LIMIT 1) AS j ON true
 WHERE (%(tenant)s::text IS NULL OR r.tenant_id = %(tenant)s)
   AND (%(status)s::text IS NULL OR r.status = %(status)s)
   AND (%(before)s::bigint IS NULL OR r.run_id < %(before)s)
 ORDER BY r.run_id DESC
 LIMIT %(limit)s)
UNION ALL
(SELECT a.id, a.type, a.tenant_id, 'waiting', a.created_at, NULL::timestamptz, 1, 1, 0, 0, 0,
        NULL::bigint, NULL::text
 FROM pipeline.active_jobs AS a
 WHERE a.status = 'waiting' AND a.root_id IS NULL
   AND (%(status)s::text IS NULL OR %(status)s = 'waiting')
   AND (%(tenant)s::text IS NULL OR a.tenant_id = %(tenant)s)
   AND (%(before)s::bigint IS NULL OR a.id < %(before)s)
   -- A root that enqueued children before it waited has a runs row: listed above.
   AND NOT EXISTS (SELECT FROM pipeline.runs AS o WHERE o.run_id = a.id)
 ORDER BY a.id DESC
 LIMIT %(limit)s)
ORDER BY run_id DESC
LIMIT %(limit)s;

-- name: run_status
-- One run's stored status and counts; no row for a job without descendants (its run is itself).
SELECT status, active, done, failed, cancelled, blocked_job_id, blocked_reason, finished_at
FROM pipeline.runs
WHERE run_id = %(run_id)s AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s);

-- name: runs_by_status
-- How many runs are in each status (`pipeline status`, the metrics), through runs_status.
SELECT status, count(*) FROM pipeline.runs
WHERE %(tenant)s::text IS NULL OR tenant_id = %(tenant)s
GROUP BY status ORDER BY status;

-- name: run_blocked_steps
-- The next stages a run will never reach: a join of its (named after the job that fanned out,
-- one of `job_ids`) whose child failed or was cancelled never enqueues its `then` stage; and
-- the job that blocks the run (`blocked_id`), when it is no fan-out's child, never enqueues
-- the `then` its stage declares, as the workers recorded it (pipeline.stages, any version).
-- after: the job that fanned out, or the blocking job; fan_out says which.
SELECT then_type AS stage, id AS after, failed, true AS fan_out FROM pipeline.joins
WHERE id = ANY(%(job_ids)s::bigint[]) AND failed > 0 AND then_job_id IS NULL
  AND then_type IS NOT NULL
UNION
SELECT s.then_stage, b.id, 1, false
FROM pipeline.jobs AS b
JOIN pipeline.stages AS s ON s.name = b.type
WHERE b.id = %(blocked_id)s::bigint AND b.join_id IS NULL AND s.then_stage IS NOT NULL
  AND b.status IN ('failed', 'cancelled')
ORDER BY after, stage;

-- name: run_jobs
-- Every job of one run in id order (the order a fan-out enqueued its pages), through the
-- primary key and jobs_run. total: how many there are beyond the limit.
SELECT id, type, tenant_id, status, attempts, max_attempts, parent_id, last_error,
       created_at, started_at, finished_at, count(*) OVER () AS total
FROM pipeline.jobs
WHERE (id = %(run_id)s OR root_id = %(run_id)s)
  AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
ORDER BY id
LIMIT %(limit)s;

-- name: run_single_outputs
-- The outputs of a run's single jobs (part NULL: not the pages of a fan-out, whose text is
-- large and shown per page), through outputs_run: of each stage's newest generation, as the
-- readers return them (a rerun's older ones are compared on /runs/ID/diff).
SELECT o.stage, o.job_id, o.output
FROM pipeline.outputs o
JOIN pipeline.jobs j ON j.id = o.job_id
WHERE o.root_id = %(run_id)s AND o.part IS NULL
  AND o.generation = (SELECT max(n.generation) FROM pipeline.outputs AS n
                      WHERE n.root_id = o.root_id AND n.stage = o.stage)
  AND (%(tenant)s::text IS NULL OR j.tenant_id = %(tenant)s)
ORDER BY o.job_id
LIMIT %(limit)s;

-- name: admin_bound_transaction
-- First in a change's transaction (the dashboard's actions): each of its statements gives up
-- after timeout_ms rather than wait on a row another transaction holds. Local to the
-- transaction, so a transaction-mode pooler's next client does not inherit it.
SELECT set_config('statement_timeout', %(timeout_ms)s, true);

-- name: retry
-- A failed or cancelled job back in the queue with at least one attempt left: it moves from the
-- history (or the kept rows) back into pipeline.active_jobs, under the same id, in one
-- statement (functions/requeue_finished.sql, as for jobs_retry_failed). In a fan-out, the join
-- trigger takes it out of the finished count, so the join waits for it again. By id alone:
-- pipeline/admin/jobs.py checks the tenant with job_exists first, which is as good as a filter
-- here because no statement ever changes a job's tenant. A prune batch deleting the job's run
-- holds its row (prune_lock_runs), and one dropping its day's partition holds the partition:
-- this waits for either, then finds the row gone (pruned) or copied into the kept rows, where
-- it takes it from.
SELECT id, type
FROM pipeline.requeue_finished(ARRAY[%(id)s::bigint], ARRAY['failed', 'cancelled']);

-- name: jobs_retry_failed
-- One batch (one short transaction) of `jobs retry --failed`, in id order after the previous
-- batch's last id: a job that fails again while the command runs is not retried twice, and the
-- command ends. job_history_failed holds the failed and cancelled rows alone, so done ones are
-- never read. Each picked job moves back as in `retry` (functions/requeue_finished.sql); one
-- that a prune deletes meanwhile, or that is retried meanwhile, is not found there, and stays
-- as it is.
SELECT id, type
FROM pipeline.requeue_finished(
    ARRAY(SELECT id FROM pipeline.jobs
          WHERE status = 'failed' AND id > %(after)s
            AND (%(stage)s::text IS NULL OR type = %(stage)s)
            AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
          ORDER BY id
          LIMIT %(batch)s),
    ARRAY['failed']);

-- name: cancel
-- A queued job stops here; a running job's worker hears of it on pipeline_cancel, and its own
-- writes fail the fence from now on (the job has left pipeline.active_jobs). The job moves into
-- the history in this statement (functions/cancel_jobs.sql, as for cancel_tree and
-- jobs_cancel_queued). By id alone, waiting for a claim that is taking the job right now (it is
-- running by then, and its worker is told): the tenant is checked first, as for retry.
SELECT id, notified
FROM pipeline.cancel_jobs(ARRAY[%(id)s::bigint], %(reason)s::text);

-- name: cancel_tree
-- Cancel a job and everything it led to, in this one statement: for a run's root, every queued
-- or running job of the run (through jobs_run and the primary key); for a job inside a run, it
-- and its descendants (children by parent_id, through jobs_parent and job_history_parent,
-- level by level). Each moves into the history as cancelled (functions/cancel_jobs.sql, in one
-- statement: the join and the run's counts see them together). Each running one's worker hears
-- of it on pipeline_cancel (as in `cancel`) and stops it; its writes fail the fence from now
-- on. The jobs are locked first, in id order; rows a claim is taking right now are waited for
-- (FOR UPDATE, not SKIP LOCKED): they are running when this takes them. A join whose child is
-- cancelled counts it as failed, so no next stage is enqueued after this. The run's row
-- (count_runs) ends `cancelled`.
WITH RECURSIVE subtree(id) AS (
    SELECT id FROM pipeline.jobs WHERE id = %(id)s AND root_id IS NOT NULL
    UNION
    SELECT j.id FROM subtree JOIN pipeline.jobs AS j ON j.parent_id = subtree.id
)
SELECT id, notified
FROM pipeline.cancel_jobs(
    ARRAY(SELECT a.id FROM pipeline.active_jobs AS a
          WHERE a.id IN (SELECT id FROM pipeline.active_jobs WHERE id = %(id)s OR root_id = %(id)s
                         UNION ALL
                         SELECT id FROM subtree)
          ORDER BY a.id
          FOR UPDATE OF a),
    %(reason)s::text)
ORDER BY id;

-- name: jobs_max_id
-- Where a bulk cancel stops: jobs enqueued after it started (a fan-out in flight) are not its.
SELECT coalesce(max(id), 0) FROM pipeline.active_jobs;

-- name: jobs_cancel_queued
-- One batch (one short transaction) of `jobs cancel --queued`: queued jobs only, never a
-- running one (those are cancelled by id, with the notification). Two arms, one per partial
-- index (jobs_ready, jobs_ready_untenanted): "status = 'queued' AND type = ..." alone implies
-- neither index's predicate and would scan the table. SKIP LOCKED leaves a job that a worker
-- is claiming right now to that worker: it is running by the time this commits. The picked
-- jobs stay locked by this statement, so they are still queued when they move into the history
-- (functions/cancel_jobs.sql, as for `cancel`).
WITH tenanted AS (
    SELECT id FROM pipeline.active_jobs
    WHERE status = 'queued' AND type = %(stage)s AND tenant_id IS NOT NULL
      AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s) AND id <= %(upto)s
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
), untenanted AS (
    SELECT id FROM pipeline.active_jobs
    WHERE status = 'queued' AND type = %(stage)s AND tenant_id IS NULL
      AND %(tenant)s::text IS NULL AND id <= %(upto)s
    LIMIT %(batch)s - (SELECT count(*) FROM tenanted)
    FOR UPDATE SKIP LOCKED
)
SELECT id
FROM pipeline.cancel_jobs(
    ARRAY(SELECT id FROM tenanted UNION ALL SELECT id FROM untenanted), %(reason)s::text);

-- name: schedule_tenant
-- Whose schedule it is, before a pause or resume scoped to a tenant (pipeline/admin/schedules.py).
SELECT tenant_id FROM pipeline.schedules WHERE name = %(name)s;

-- name: prune_cutoff
-- By the database's clock, once per pass: every batch of a pass uses the same cutoff.
SELECT now() - make_interval(secs => %(older_than_s)s::float8);

-- name: prune_partitions
-- The days of the history wholly before the cutoff, oldest first, each with its upper bound.
-- The legacy partition of migration 0013 is among them once its last day is past the cutoff.
SELECT part::text, upper FROM pipeline.history_days WHERE upper <= %(cutoff)s ORDER BY upper;

-- name: prune_detached
-- Days a pass detached and did not drop (it stopped in between): tables of the history's
-- shape that are no partition of it any more.
SELECT c.oid::regclass::text
FROM pg_class AS c
WHERE c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'pipeline.job_history'::regclass)
  AND c.relkind = 'r' AND NOT c.relispartition
  AND c.relname ~ '^job_history_(legacy|[0-9]{8})$';

-- name: prune_partition_survivors
SELECT pipeline.history_partition_survivors(%(part)s, %(keep_failed)s);

-- name: prune_detach_partition
SELECT pipeline.detach_history_partition(%(part)s, %(survivors)s::bigint[]);

-- name: prune_drop_partition
SELECT jobs, outputs, joins, keys FROM pipeline.drop_history_partition(%(part)s);

-- name: prune_lock
-- One pruner at a time (workers each run one): two concurrent deletes of overlapping rows
-- would wait on each other's row locks, or deadlock. Held until the batch commits. A key of its
-- own (migration_lock and schedule_sync_lock hold the others): a worker's start, which syncs
-- schedules, never waits for a prune batch.
SELECT pg_advisory_xact_lock(7263941873223);

-- name: prune_vacuum_days
-- The history's days that a pass's run-by-run batches can have deleted from: those that begin
-- before the cutoff (the days wholly past it were dropped first; one a pass left, its lock not
-- free, among them), and a day whose lower bound reads otherwise. Its VACUUM reads these alone:
-- a VACUUM of the history reads every day, 25 s of an 8 GB history for the one day changed.
SELECT n.nspname, c.relname
FROM pipeline.history_days AS d
JOIN pg_class AS c ON c.oid = d.part
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE coalesce(d.lower < %(cutoff)s, true)
ORDER BY c.relname;

-- name: prune_vacuum
-- After a pass that deleted many rows. Until a vacuum removes them, a table of mostly dead rows
-- makes the claim slow to plan (it plans its statements afresh for each tenant) once the
-- statistics have seen it, and autoanalyze sees it soon: in the benchmark, after a
-- million-row prune, claims ran at a fifth of their rate until autovacuum caught up, and at
-- full rate right after this. {days}: the days of prune_vacuum_days, each followed by a comma
-- (retention.py puts them in as identifiers). SKIP_LOCKED: a vacuum of the table that is
-- running already (autovacuum, another worker's pruner) does the job, and nobody waits for
-- it; PostgreSQL warns of each table it skips (55P03), and the pass says so. ANALYZE: the
-- planner's row counts were those of the table before the prune.
VACUUM (SKIP_LOCKED, ANALYZE) {days} pipeline.job_history_kept, pipeline.outputs, pipeline.joins;

-- name: prune_walk_start
-- Once per run-by-run pass, before anything else of it: the first row its walk meets (as
-- prune_lock_runs' scan from the start, through each day's id index), or none. A pass whose walk
-- meets none has no run to delete: it runs no batch and does not read the history's days
-- (prune_history_days), which cost a worker's pass every 5 minutes 44-56 ms at 108 days
-- whether it found anything or not. One that meets a row begins its first batch's walk there.
SELECT id FROM pipeline.jobs
WHERE status IN ('done', 'failed', 'cancelled') AND finished_at < %(cutoff)s
ORDER BY id
LIMIT 1;

-- name: prune_history_horizon
-- Once per run-by-run pass, before prune_history_days: the finish time before which no day of
-- the history takes a row any more, and the greatest id among the kept rows. A job finishes at
-- now(), its transaction's start: a transaction begun after this statement writes at or after
-- its now(), and one under way in this database writes at its start, which pg_stat_activity
-- shows (and pg_prepared_xacts, when it was prepared: it began before). A day more for what they
-- do not show: the sessions of other roles, whose times only a role with pg_read_all_stats sees,
-- and a clock stepped back. A day that ends before it is closed: the rows it holds now are all
-- it will hold (retention.py, history_reach).
SELECT least(now(),
             (SELECT min(xact_start) FROM pg_catalog.pg_stat_activity
              WHERE datname = current_database()),
             (SELECT min(prepared) FROM pg_catalog.pg_prepared_xacts
              WHERE database = current_database())) - interval '1 day' AS open_from,
       (SELECT max(id) FROM pipeline.job_history_kept) AS kept_greatest;

-- name: prune_history_days
-- Each day of the history, oldest first, with the least id, least root id and greatest id of its
-- rows (sql/functions/history_day_bounds.sql): which days a pass's batches must read.
SELECT lower, upper, least_id, least_root, greatest_id FROM pipeline.history_day_bounds();

-- name: prune_lock_runs
-- The first statement of a prune batch: the runs it deletes, each locked whole. It walks
-- finished jobs older than the cutoff in id order after the previous batch's cursor, so rows
-- that must stay are passed over once per pass, not read again by every batch: through each
-- day's id index (the history has none on finished_at; by (finished_at, id) each batch read
-- and sorted every row of the days before the cutoff, 0.45 s a batch with a million a day),
-- the days that begin after the cutoff left out by their bounds. A run the walk meets is taken
-- when all of it is finished and past the cutoff (and none of it failed, with keep_failed):
-- while any job of it is queued or running, or finished after the cutoff, the run may still
-- read its outputs, count its joins or be retried. Every job of a taken run is locked, SKIP
-- LOCKED: a job that another transaction is changing right now (a retry) stays unlocked, and
-- prune_runs then leaves its run to a later pass. Nothing that changes a job can slip in
-- between: it waits for the lock, and finds the run whole (the batch kept it) or gone. Runs
-- are taken in the order the walk meets them while they hold `batch` jobs in all, and the
-- first one whatever its size, so a batch stays near `batch` jobs when the walk meets many
-- large runs at once. The cursor (next_id) is the last row read before the first run not
-- taken; more: the next batch has rows to read.
-- The runs met are read whole by pipeline.run_members, and the taken runs' rows locked, in the
-- days they can be in: the pass leaves out the days from skip_from until skip_to, which hold no
-- job of any run up to runs_upto (retention.py, history_reach). A run met above it (a job that
-- finished before the cutoff after the pass began) is passed over, as a live one is, and left to
-- a later pass.
WITH scanned AS (
    SELECT s.id, coalesce(s.root_id, s.id) AS run_id,
           row_number() OVER (ORDER BY s.id) AS pos
    FROM (
        SELECT id, root_id
        FROM pipeline.jobs
        WHERE status IN ('done', 'failed', 'cancelled') AND finished_at < %(cutoff)s
          AND id > %(after_id)s::bigint
        ORDER BY id
        LIMIT %(batch)s
    ) AS s
),
met AS (
    SELECT run_id, min(pos) AS pos FROM scanned GROUP BY run_id
),
finished_runs AS (
    SELECT m.run_id, m.pos, sum(n.jobs) OVER (ORDER BY m.pos) AS upto
    FROM met AS m
    -- The runs met go in as a row's value, not as a sub-select in the call: the planner
    -- inlines no call whose arguments hold one.
    CROSS JOIN (SELECT array_agg(run_id) AS ids FROM met) AS a
    JOIN pipeline.run_members(a.ids, %(cutoff)s, %(keep_failed)s, %(skip_from)s, %(skip_to)s)
        AS n ON n.run_id = m.run_id
    WHERE NOT n.live AND m.run_id <= %(runs_upto)s::bigint
),
taken AS (
    SELECT run_id FROM finished_runs
    WHERE upto <= %(batch)s OR pos = (SELECT min(pos) FROM finished_runs)
),
stop AS (
    SELECT min(pos) AS pos FROM finished_runs
    WHERE run_id NOT IN (SELECT run_id FROM taken)
),
locked_rows AS (
    -- A taken run is all finished: its jobs are in the history or among the kept rows (a view
    -- of a UNION cannot be locked as a whole).
    SELECT l.id, l.root_id FROM (
        SELECT j.id, j.root_id FROM pipeline.job_history AS j
        WHERE (j.id BETWEEN (SELECT min(run_id) FROM taken) AND (SELECT max(run_id) FROM taken)
               OR j.root_id BETWEEN (SELECT min(run_id) FROM taken)
                                AND (SELECT max(run_id) FROM taken))
          AND (j.id IN (SELECT run_id FROM taken) OR j.root_id IN (SELECT run_id FROM taken))
          AND (j.finished_at < %(skip_from)s OR j.finished_at >= %(skip_to)s)
        FOR UPDATE SKIP LOCKED
    ) AS l
    UNION ALL
    SELECT l.id, l.root_id FROM (
        SELECT j.id, j.root_id FROM pipeline.job_history_kept AS j
        WHERE (j.id BETWEEN (SELECT min(run_id) FROM taken) AND (SELECT max(run_id) FROM taken)
               OR j.root_id BETWEEN (SELECT min(run_id) FROM taken)
                                AND (SELECT max(run_id) FROM taken))
          AND (j.id IN (SELECT run_id FROM taken) OR j.root_id IN (SELECT run_id FROM taken))
        FOR UPDATE SKIP LOCKED
    ) AS l
),
locked AS (
    SELECT t.run_id, count(k.run_id) AS jobs
    FROM taken AS t
    LEFT JOIN (
        SELECT k.run_id FROM locked_rows AS l
        CROSS JOIN LATERAL (VALUES (l.id), (nullif(l.root_id, l.id))) AS k(run_id)
    ) AS k ON k.run_id = t.run_id
    GROUP BY t.run_id
),
next AS (
    SELECT id FROM scanned
    WHERE pos < coalesce((SELECT pos FROM stop), 'Infinity'::numeric)
    ORDER BY pos DESC
    LIMIT 1
)
SELECT (SELECT count(*) FROM scanned) = %(batch)s OR (SELECT pos FROM stop) IS NOT NULL AS more,
       (SELECT id FROM next) AS next_id,
       ARRAY(SELECT run_id FROM locked ORDER BY run_id) AS runs,
       ARRAY(SELECT jobs FROM locked ORDER BY run_id) AS locked;

-- name: prune_runs
-- The second statement of a prune batch, in the same transaction as prune_lock_runs and with a
-- snapshot taken after its locks: every run whose jobs are all locked by this batch (none added
-- or left unlocked since) and still finished past the cutoff is deleted whole, with its outputs,
-- join rows and dedup keys. A run retried before the locks were taken is live again here, and stays.
-- Each table and day is read for the range of the runs' ids, as in prune_lock_runs
-- (pipeline.run_members), the days from skip_from until skip_to left out; a run above runs_upto
-- (none that prune_lock_runs gave) would not be seen whole there, and stays.
WITH given AS (
    SELECT r.run_id, r.locked
    FROM unnest(%(runs)s::bigint[], %(locked)s::bigint[]) AS r(run_id, locked)
),
runs AS (
    SELECT g.run_id FROM given AS g
    LEFT JOIN pipeline.run_members(%(runs)s::bigint[], %(cutoff)s, %(keep_failed)s,
                                   %(skip_from)s, %(skip_to)s) AS n
        ON n.run_id = g.run_id
    WHERE g.locked = coalesce(n.jobs, 0) AND NOT coalesce(n.live, false)
      AND g.run_id <= %(runs_upto)s::bigint
),
gone AS (
    DELETE FROM pipeline.job_history AS j
    WHERE (j.id BETWEEN (SELECT min(run_id) FROM given) AND (SELECT max(run_id) FROM given)
           OR j.root_id BETWEEN (SELECT min(run_id) FROM given)
                            AND (SELECT max(run_id) FROM given))
      AND (j.id IN (SELECT run_id FROM runs) OR j.root_id IN (SELECT run_id FROM runs))
      AND (j.finished_at < %(skip_from)s OR j.finished_at >= %(skip_to)s)
    RETURNING j.id
),
gone_kept AS (
    DELETE FROM pipeline.job_history_kept AS j
    WHERE (j.id BETWEEN (SELECT min(run_id) FROM given) AND (SELECT max(run_id) FROM given)
           OR j.root_id BETWEEN (SELECT min(run_id) FROM given)
                            AND (SELECT max(run_id) FROM given))
      AND (j.id IN (SELECT run_id FROM runs) OR j.root_id IN (SELECT run_id FROM runs))
    RETURNING j.id
),
deleted AS (
    SELECT id FROM gone UNION ALL SELECT id FROM gone_kept
),
outputs AS (
    DELETE FROM pipeline.outputs AS o USING deleted WHERE o.job_id = deleted.id RETURNING o.job_id
),
joins AS (
    -- A join row is named after the job that fanned out: it goes with that job.
    DELETE FROM pipeline.joins AS jj USING deleted WHERE jj.id = deleted.id RETURNING jj.id
),
keys AS (
    -- A pruned job's dedup key no longer holds: the key may be used again.
    DELETE FROM pipeline.dedup_keys AS k USING deleted WHERE k.job_id = deleted.id
    RETURNING k.job_id
),
tries AS (
    DELETE FROM pipeline.job_attempts AS t USING deleted WHERE t.job_id = deleted.id
),
waits AS (
    DELETE FROM pipeline.waits AS w USING deleted WHERE w.job_id = deleted.id
),
generations AS (
    -- Its reruns (pipeline.run_generations) go with the run.
    DELETE FROM pipeline.run_generations AS g USING runs AS r WHERE g.run_id = r.run_id
),
blobs AS (
    -- Its references to blobs go with the run, their blobs candidates for the sweep
    -- (functions/drop_blob_refs.sql). Read below: a SELECT in WITH runs only when read.
    SELECT pipeline.drop_blob_refs(ARRAY(SELECT run_id FROM runs)) AS candidates
)
SELECT (SELECT count(*) FROM deleted) AS jobs,
       (SELECT count(*) FROM outputs) AS outputs,
       (SELECT count(*) FROM joins) AS joins,
       (SELECT count(*) FROM keys) AS keys
FROM blobs;

-- name: blob_sweep_take
-- A batch of the blob sweep (pipeline/maintenance/blob_sweep.py): the candidates after the key
-- `after`, in key order, each with its `since` and whether a run references it again (enqueued
-- since its last reference went). Those are candidates no more: their rows go here. The others
-- are for the store to delete, in the sweep's own time, outside any transaction.
WITH batch AS (
    SELECT blob_key, since FROM pipeline.blob_garbage
    WHERE blob_key > %(after)s
    ORDER BY blob_key
    LIMIT %(batch)s
),
used AS (
    DELETE FROM pipeline.blob_garbage AS g
    USING batch AS b
    WHERE g.blob_key = b.blob_key
      AND EXISTS (SELECT FROM pipeline.blob_refs AS r WHERE r.blob_key = b.blob_key)
    RETURNING g.blob_key
)
SELECT b.blob_key, b.since, u.blob_key IS NOT NULL AS used
FROM batch AS b
LEFT JOIN used AS u ON u.blob_key = b.blob_key
ORDER BY b.blob_key;

-- name: blob_sweep_done
-- The candidates whose blobs the sweep deleted, or found gone from its store: their rows go,
-- unless a prune made the key a candidate again since the sweep read it (a later `since`: the
-- same bytes may have been stored again, for the run just pruned).
DELETE FROM pipeline.blob_garbage AS g
USING unnest(%(keys)s::text[], %(since)s::timestamptz[]) AS d(blob_key, since)
WHERE g.blob_key = d.blob_key AND g.since = d.since;

-- name: rollups_drop_old
-- The rollups of finished jobs (pipeline.finished_by_minute, per tenant too) older than
-- %(keep_s)s seconds: the status views read the last 24 hours of them. Run hourly by the
-- Partitions service, so each run deletes about an hour of minutes, by index. The days its
-- minutes were in stay known, by stage and outcome (pipeline.finished_days: which days of the
-- history a jobs list by stage reads), in the same statement, so that no minute is in neither.
WITH whole AS (
    DELETE FROM pipeline.finished_by_minute
    WHERE minute < now() - make_interval(secs => %(keep_s)s::float8)
    RETURNING minute, stage, status
),
days AS (
    INSERT INTO pipeline.finished_days (stage, status, day)
    SELECT DISTINCT stage, status, date_bin('1 day', minute, timestamptz '2000-01-01 00:00+00')
    FROM whole
    ON CONFLICT DO NOTHING
),
dropped_days AS (
    -- Days before the history's first partition, which retention dropped: they would widen
    -- every stage's span (finished_span) by days there is nothing to read in. The view opens no
    -- day (schema.sql says why that matters here).
    DELETE FROM pipeline.finished_days
    WHERE day < (SELECT min(lower) FROM pipeline.history_days)
),
tenants AS (
    DELETE FROM pipeline.tenant_finished_by_minute
    WHERE minute < now() - make_interval(secs => %(keep_s)s::float8)
    RETURNING 1
)
SELECT (SELECT count(*) FROM whole) + (SELECT count(*) FROM tenants);

-- name: rollups_fold_shards
-- The shards of minutes older than an hour folded into shard 0, one row per minute, stage and
-- outcome (and tenant): finishers write to the current minute, each finishing transaction to a
-- shard no other open one writes (functions/rollup_shard.sql), so a day read by the status
-- views would otherwise hold up to 16 rows where 1 will do. Run
-- hourly by the Partitions service. A retry or prune that counts jobs out of an old minute
-- meanwhile adds a row to its own shard, which the next round folds.
WITH gone AS (
    DELETE FROM pipeline.finished_by_minute
    WHERE minute < date_trunc('minute', now()) - interval '1 hour' AND shard <> 0
    RETURNING *
),
whole AS (
    INSERT INTO pipeline.finished_by_minute AS r
        (minute, stage, status, shard, jobs, attempts, max_attempts, timed, min_run_s, max_run_s,
         run_hist)
    SELECT minute, stage, status, 0, sum(jobs), sum(attempts), max(max_attempts), sum(timed),
           min(min_run_s), max(max_run_s), pipeline.histogram_sum(run_hist)
    FROM gone
    GROUP BY minute, stage, status
    ORDER BY minute, stage, status
    ON CONFLICT (minute, stage, status, shard) DO UPDATE
    SET jobs = r.jobs + excluded.jobs,
        attempts = r.attempts + excluded.attempts,
        max_attempts = greatest(r.max_attempts, excluded.max_attempts),
        timed = r.timed + excluded.timed,
        min_run_s = least(r.min_run_s, excluded.min_run_s),
        max_run_s = greatest(r.max_run_s, excluded.max_run_s),
        run_hist = pipeline.histogram_add(r.run_hist, excluded.run_hist)
    RETURNING 1
),
gone_tenants AS (
    DELETE FROM pipeline.tenant_finished_by_minute
    WHERE minute < date_trunc('minute', now()) - interval '1 hour' AND shard <> 0
    RETURNING *
),
tenants AS (
    INSERT INTO pipeline.tenant_finished_by_minute AS r
        (tenant_id, minute, stage, status, shard, jobs, attempts, max_attempts, timed, min_run_s,
         max_run_s, run_hist)
    SELECT tenant_id, minute, stage, status, 0, sum(jobs), sum(attempts), max(max_attempts),
           sum(timed), min(min_run_s), max(max_run_s), pipeline.histogram_sum(run_hist)
    FROM gone_tenants
    GROUP BY tenant_id, minute, stage, status
    ORDER BY tenant_id, minute, stage, status
    ON CONFLICT (tenant_id, minute, stage, status, shard) DO UPDATE
    SET jobs = r.jobs + excluded.jobs,
        attempts = r.attempts + excluded.attempts,
        max_attempts = greatest(r.max_attempts, excluded.max_attempts),
        timed = r.timed + excluded.timed,
        min_run_s = least(r.min_run_s, excluded.min_run_s),
        max_run_s = greatest(r.max_run_s, excluded.max_run_s),
        run_hist = pipeline.histogram_add(r.run_hist, excluded.run_hist)
    RETURNING 1
)
SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM gone_tenants);
