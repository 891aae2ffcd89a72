-- Queued, running or waiting jobs cancelled: the jobs `ids` leave pipeline.active_jobs and move
-- into the history as cancelled, with `reason` as their last error ('cancelled' when NULL), in
-- one statement. A running one's attempt ends here (its worker's lines of it are not written:
-- its fenced writes find the job gone), and its worker hears of it on pipeline_cancel
-- ("id:claims", pipeline/worker/cancels.py); a queued or waiting job has no worker to tell.
-- Returns each cancelled job's id, and whether its worker was told. The one place that spells
-- a cancel: `cancel` (one job by id), `cancel_tree` (a job and what it led to) and
-- `jobs_cancel_queued` (a batch of a stage's queued jobs) call it (queries_admin.sql), each
-- with the jobs it picked, locked or not as its comment says, and the tenant checked by its
-- caller. An id that is no longer there (cancelled or finished meanwhile) is left out.
--
-- VOLATILE: its statement takes a snapshot of its own when it is called, after the locks the
-- caller's picking took or waited for, and its DELETE waits for a row another transaction
-- holds, as a statement of the caller's own would: a job a claim was taking when the caller
-- read it is running here, and its worker is told. One statement, so the triggers on the hot
-- table and the history (a run's counts, the rollups, the freed slots: statement triggers
-- over its transition tables; the join's count, row by row) see every job it cancels together,
-- as they did when each caller spelled the move: a cancelled fan-out's join counts all its
-- children failed in the statement that also ends the run.
CREATE OR REPLACE FUNCTION pipeline.cancel_jobs(p_ids bigint[], p_reason text)
RETURNS TABLE (id bigint, notified boolean)
LANGUAGE sql VOLATILE
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM pipeline.active_jobs AS j
        WHERE j.id = ANY (p_ids)
        RETURNING j AS job, j.id, j.claims, j.status = 'running' AS running
    ),
    cancelled AS (
        INSERT INTO pipeline.job_history
        SELECT h.*
        FROM gone AS g,
             pipeline.finished_job(g.job, 'cancelled', coalesce(p_reason, 'cancelled')) AS h
    ),
    tried AS (
        INSERT INTO pipeline.job_attempts
        SELECT a.*
        FROM gone AS g,
             pipeline.ended_attempt(g.job, 'cancelled', coalesce(p_reason, 'cancelled')) AS a
        WHERE g.running
    )
    -- pg_notify returns void, which is not NULL: true once the notification is queued (it
    -- goes out when the caller commits). CASE, so that only a running job's is sent.
    SELECT g.id,
           CASE WHEN g.running
                THEN pg_notify('pipeline_cancel', g.id::text || ':' || g.claims::text) IS NOT NULL
                ELSE false END
    FROM gone AS g
$$;
