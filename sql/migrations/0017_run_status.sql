-- Runs that tell the truth (issue 23, item 1): a stored status per run, kept by the statements
-- that change its jobs, so that a run whose fan-out child failed for good reads `failed`, with
-- the job that blocks it, instead of a green "done". The runs there are counted here once.

-- Runs (a root job and every job it led to) that have more than one job, each with its status,
-- kept exact by the statements that change its jobs (sql/functions/count_runs.sql) rather than
-- counted from the jobs on every read: `pipeline runs`, `pipeline status`, the dashboard and
-- the metrics read it. A job alone has no row: its run's status is the job's own. The row is
-- named after the root job and goes when retention deletes the run.
CREATE TABLE pipeline.runs (
    run_id         bigint      NOT NULL CONSTRAINT runs_pkey PRIMARY KEY,
    tenant_id      text,
    -- pipeline.run_status() of the counts below; 'waiting' is reserved for durable waits.
    status         text        NOT NULL
                   CONSTRAINT runs_status_check
                   CHECK (status IN ('running', 'waiting', 'done', 'failed', 'cancelled')),
    active         integer     NOT NULL DEFAULT 0,  -- queued or running jobs
    done           integer     NOT NULL DEFAULT 0,
    failed         integer     NOT NULL DEFAULT 0,
    cancelled      integer     NOT NULL DEFAULT 0,
    -- The first job that failed or was cancelled, and its error: why the run cannot end done.
    blocked_job_id bigint,
    blocked_reason text,
    created_at     timestamptz NOT NULL,  -- the root job's
    -- When it stopped running (ended, or blocked); NULL while running.
    finished_at    timestamptz
) WITH (fillfactor = 70);
-- The runs list (newest first, by status) and `pipeline status`'s counts by status.
CREATE INDEX runs_status ON pipeline.runs (status, run_id);
CREATE INDEX runs_tenant ON pipeline.runs (tenant_id, run_id) WHERE tenant_id IS NOT NULL;

-- The function: sql/functions/count_runs.sql.
CREATE TRIGGER active_jobs_count_runs
    AFTER INSERT ON pipeline.active_jobs
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline.count_runs();
CREATE TRIGGER job_history_count_runs_finished
    AFTER INSERT ON pipeline.job_history
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline.count_runs();
CREATE TRIGGER job_history_count_runs_removed
    AFTER DELETE ON pipeline.job_history
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline.count_runs();
CREATE TRIGGER job_history_kept_count_runs_removed
    AFTER DELETE ON pipeline.job_history_kept
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline.count_runs();

-- The runs there are, counted once from their jobs, as count_runs would have kept them.
INSERT INTO pipeline.runs (run_id, tenant_id, status, active, done, failed, cancelled,
                           blocked_job_id, blocked_reason, created_at, finished_at)
SELECT c.run_id, c.tenant_id, pipeline.run_status(c.active, c.failed, c.cancelled),
       c.active, c.done, c.failed, c.cancelled, c.blocked_job_id, c.blocked_reason,
       coalesce(c.created_at, now()),
       CASE WHEN pipeline.run_status(c.active, c.failed, c.cancelled) <> 'running'
            THEN coalesce(c.last_finished_at, now()) END
FROM (
    SELECT coalesce(j.root_id, j.id) AS run_id,
           (array_agg(j.tenant_id) FILTER (WHERE j.root_id IS NULL))[1] AS tenant_id,
           min(j.created_at) FILTER (WHERE j.root_id IS NULL) AS created_at,
           max(j.finished_at) AS last_finished_at,
           count(*) FILTER (WHERE j.status IN ('queued', 'running')) AS active,
           count(*) FILTER (WHERE j.status = 'done') AS done,
           count(*) FILTER (WHERE j.status = 'failed') AS failed,
           count(*) FILTER (WHERE j.status = 'cancelled') AS cancelled,
           (array_agg(j.id ORDER BY j.finished_at, j.id)
                FILTER (WHERE j.status IN ('failed', 'cancelled')))[1] AS blocked_job_id,
           (array_agg(j.last_error ORDER BY j.finished_at, j.id)
                FILTER (WHERE j.status IN ('failed', 'cancelled')))[1] AS blocked_reason
    FROM pipeline.jobs AS j
    GROUP BY 1
    HAVING bool_or(j.root_id IS NOT NULL)
) AS c;
