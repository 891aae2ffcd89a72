-- The history row of a job that finishes: its row in pipeline.active_jobs as the finishing
-- statement's DELETE returned it (RETURNING j), with how it ended. The one place that maps a
-- job into pipeline.job_history: every statement that moves jobs there (queries.sql:
-- complete, acknowledge, fail, release, reclaim_expired; functions/cancel_jobs.sql, which the
-- three cancels of queries_admin.sql call) inserts `SELECT h.* FROM gone,
-- pipeline.finished_job(job, ...) AS h`, so a column added to both tables is added here alone.
-- The fence stays in each statement's DELETE.
--
-- wall_s, cpu_s, usage: what its last attempt consumed, as the worker sent it (NULL when it
-- sent nothing: a cancel, a reclaim).
--
-- A failed job keeps no worker; the others keep the one that ran them (or was running them
-- when cancelled). `released`: it failed being given back at a worker's stop (one release
-- more); `lost`: its lease expired (a suspect from now on). Both are due again as they end.
--
-- A set-returning SQL function of a single SELECT without FROM, not STRICT and without a SET
-- clause, so that the planner inlines it as a subquery of the INSERT, once: each column then
-- reads the field straight from the DELETE's row. Called as `SELECT (f(job)).*`, a scalar
-- function is inlined once per column, which made planning the acknowledgement 7 times
-- slower (1.6 vs 0.22 ms) and cost the drain benchmark 3 us of Postgres CPU a job (each
-- connection plans it a few times before it keeps a generic plan); with a SET clause it would
-- be called once per column per job. Without SET, its body is parsed with the caller's
-- search_path, hence every name, type and operator qualified here.
CREATE OR REPLACE FUNCTION pipeline.finished_job(
    job pipeline.active_jobs, status text, last_error text,
    released boolean DEFAULT false, lost boolean DEFAULT false,
    wall_s real DEFAULT NULL, cpu_s real DEFAULT NULL, usage jsonb DEFAULT NULL
) RETURNS SETOF pipeline.job_history
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT
        job.id, job.type, job.tenant_id, job.payload, job.priority, status, job.attempts,
        job.max_attempts,
        CASE WHEN released OR lost THEN pg_catalog.now() ELSE job.run_after END,
        NULL::pg_catalog.timestamptz, job.lease_seconds,
        CASE WHEN status OPERATOR(pg_catalog.=) 'failed' THEN NULL ELSE job.worker_id END,
        last_error, job.dedup_key, job.parent_id, job.root_id, job.join_id, job.created_at,
        job.started_at, pg_catalog.now(), job.claims, job.suspect OR lost, job.crash_reclaims,
        job.releases OPERATOR(pg_catalog.+) released::integer, false, job.traceparent, wall_s,
        cpu_s, usage
$$;
