-- The history row of a job that finishes: its row in pipeline.active_jobs as the finishing
-- statement's DELETE returned it (RETURNING j), with how it ended. The one place that maps a
-- job into pipeline.job_history: every statement that moves jobs there (queries.sql:
-- complete, acknowledge, fail, release, reclaim_expired; queries_admin.sql: cancel,
-- cancel_tree, jobs_cancel_queued) inserts `(pipeline.finished_job(job, ...)).*`, so a column
-- added to both tables is added here alone. The fence stays in each statement's DELETE.
--
-- A failed job keeps no worker; the others keep the one that ran them (or was running them
-- when cancelled). `released`: it failed being given back at a worker's stop (one release
-- more); `lost`: its lease expired (a suspect from now on). Both are due again as they end.
--
-- A single SELECT of one expression and no SET clause, so that the planner inlines it into
-- the INSERT: each `(...).field` then reads the column straight from the DELETE's row, which
-- costs the hot path (the acknowledgement) nothing over spelling the columns out; a SET clause
-- (or any other body) would call it once per column per job. Without SET, its body is parsed
-- with the caller's search_path, hence every name and operator qualified here.
CREATE OR REPLACE FUNCTION pipeline.finished_job(
    job pipeline.active_jobs, status text, last_error text,
    released boolean DEFAULT false, lost boolean DEFAULT false
) RETURNS pipeline.job_history
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT ROW(
        job.id, job.type, job.tenant_id, job.payload, job.priority, status, job.attempts,
        job.max_attempts,
        CASE WHEN released OR lost THEN pg_catalog.now() ELSE job.run_after END,
        NULL, job.lease_seconds,
        CASE WHEN status OPERATOR(pg_catalog.=) 'failed' THEN NULL ELSE job.worker_id END,
        last_error, job.dedup_key, job.parent_id, job.root_id, job.join_id, job.created_at,
        job.started_at, pg_catalog.now(), job.claims, job.suspect OR lost, job.crash_reclaims,
        job.releases OPERATOR(pg_catalog.+) released::integer, false, job.traceparent
    )::pipeline.job_history
$$;
