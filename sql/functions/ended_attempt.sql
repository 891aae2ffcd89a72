-- The row of pipeline.job_attempts for an attempt that ends: the job's row as the claim left
-- it (the finishing statement's DELETE returned it, or a SELECT ... FOR UPDATE read it before
-- an UPDATE that requeues it), how the attempt ended, and what the worker sent of it: when it
-- began to run it (epoch seconds), the lines the stage logged and how many were dropped, what
-- the attempt consumed (pipeline/usage.py) (NULL when it sent nothing). The one place that
-- maps an attempt: every statement that ends one inserts
-- `SELECT a.* FROM x, pipeline.ended_attempt(x.job, ...) AS a`.
--
-- Inlined by the planner, for the reasons and with the qualified names of
-- sql/functions/finished_job.sql.
CREATE OR REPLACE FUNCTION pipeline.ended_attempt(
    job pipeline.active_jobs, outcome text, error text,
    started double precision DEFAULT NULL, logs text DEFAULT NULL, dropped integer DEFAULT NULL,
    wall_s real DEFAULT NULL, cpu_s real DEFAULT NULL, usage jsonb DEFAULT NULL
) RETURNS SETOF pipeline.job_attempts
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT job.id, job.claims, job.attempts, job.worker_id, job.started_at,
           pg_catalog.to_timestamp(started), pg_catalog.now(), outcome, error, logs,
           coalesce(dropped, 0), wall_s, cpu_s, usage
$$;
