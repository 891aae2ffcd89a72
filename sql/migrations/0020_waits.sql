-- Durable waits (issue 23, item 5): a stage can end its run in "waiting for input"
-- (ctx.wait_for), which holds no worker, lease or tenant slot, and resumes when
-- pipeline.signal() or the wait's deadline arrives.

-- A waiting job stays in pipeline.active_jobs, with status 'waiting': no lease, no worker, no
-- slot (jobs_free_slot gives the slot back as it leaves running). The claim, heartbeats and
-- reclaim read queued or running rows only, so they pass it by.
ALTER TABLE pipeline.active_jobs DROP CONSTRAINT active_jobs_status_check;
ALTER TABLE pipeline.active_jobs ADD CONSTRAINT active_jobs_status_check
    CHECK (status IN ('queued', 'running', 'waiting'));
-- `pipeline jobs --status waiting` and the dashboard's filter: the waiting rows alone, however
-- long the backlog of queued ones.
CREATE INDEX jobs_waiting ON pipeline.active_jobs (id) WHERE status = 'waiting';

-- The attempt that ended in a wait: not charged (the claim's attempt is refunded), since a
-- resumed job must never fail for having waited.
ALTER TABLE pipeline.job_attempts DROP CONSTRAINT job_attempts_outcome_check;
ALTER TABLE pipeline.job_attempts ADD CONSTRAINT job_attempts_outcome_check
    CHECK (outcome IN ('done', 'retried', 'failed', 'timed_out', 'crashed', 'lost',
                       'cancelled', 'given_back', 'waiting'));

-- One row per wait of a job, by name: open while the job waits on it (resolved_at NULL), then
-- kept with how it ended, so that the stage, run again from the top, finds the payload a
-- signal delivered (or the timeout) for every wait it passed. A job waits on one name at a
-- time; a row is open exactly while its job's status is 'waiting' on it: the statements that
-- open and resolve one (sql/queries.sql: wait, signal, time_out_waits) change the job's row
-- in the same statement, and a waiting job that leaves pipeline.active_jobs otherwise (a
-- cancel) resolves its row as cancelled (sql/functions/count_waits.sql). schema: the JSON
-- schema of the model the stage asked for, which signal() checks a payload against without
-- the model's code. Deleted with their job by retention (drop_history_partition, prune_runs).
CREATE TABLE pipeline.waits (
    job_id      bigint      NOT NULL,
    name        text        NOT NULL,
    run_id      bigint      NOT NULL,
    tenant_id   text,
    stage       text        NOT NULL,
    schema      jsonb       NOT NULL,
    proposal    jsonb,
    detail      jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    deadline    timestamptz NOT NULL,
    resolved_at timestamptz,
    resolution  text
                CONSTRAINT waits_resolution_check
                CHECK (resolution IN ('signalled', 'timed_out', 'cancelled')),
    payload     jsonb,
    CONSTRAINT waits_pkey PRIMARY KEY (job_id, name),
    CONSTRAINT waits_resolved_check CHECK ((resolved_at IS NULL) = (resolution IS NULL))
);
-- Open waits, oldest first (list_waits, `pipeline runs waiting`), and the timeout service's
-- due ones by deadline: both read open rows alone.
CREATE INDEX waits_open ON pipeline.waits (created_at, job_id) WHERE resolved_at IS NULL;
CREATE INDEX waits_due ON pipeline.waits (deadline) WHERE resolved_at IS NULL;
-- signal(run_id, name).
CREATE INDEX waits_run ON pipeline.waits (run_id, name);

-- Runs count their waiting jobs: a run with no queued or running job and a waiting one is
-- 'waiting' (pipeline.run_status). `active` counts them too (every job of pipeline.active_jobs),
-- so that the statements moving jobs in and out of the history count them as they count the
-- others; `waiting` is the part of `active` that waits.
ALTER TABLE pipeline.runs ADD COLUMN waiting integer NOT NULL DEFAULT 0;

-- run_status takes the waiting count last, with a default, so that 0017 (which counted the
-- runs there were with three) still runs on a fresh database: the function file makes the
-- new one after this migration.
DROP FUNCTION IF EXISTS pipeline.run_status(bigint, bigint, bigint);

-- A job entering or leaving 'waiting' by an UPDATE, or deleted while waiting (a cancel): its
-- run's waiting count follows, row by row (the WHEN passes claims, retries and completions
-- by without a call). The function: sql/functions/count_waits.sql.
CREATE TRIGGER active_jobs_count_waits
    AFTER UPDATE OF status ON pipeline.active_jobs
    FOR EACH ROW
    WHEN ((OLD.status = 'waiting') IS DISTINCT FROM (NEW.status = 'waiting'))
    EXECUTE FUNCTION pipeline.count_waits();
CREATE TRIGGER active_jobs_count_waits_deleted
    AFTER DELETE ON pipeline.active_jobs
    FOR EACH ROW
    WHEN (OLD.status = 'waiting')
    EXECUTE FUNCTION pipeline.count_waits();
