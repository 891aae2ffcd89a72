-- Pipelines: a run is a root job and its descendants; outputs are stored per (run, stage, part);
-- a fan-out's join enqueues the next stage when its last child finishes.

-- NULL for a root job: the run is then the job itself, coalesce(root_id, id).
ALTER TABLE jobs ADD COLUMN root_id bigint;
-- The job whose fan-out this job belongs to; its row in job_joins counts the finished children.
ALTER TABLE jobs ADD COLUMN join_id bigint;
-- Only jobs inside a run are indexed: a standalone job (and every update of it) pays nothing.
CREATE INDEX jobs_run ON jobs (root_id) WHERE root_id IS NOT NULL;

CREATE TABLE job_outputs (
    root_id    bigint      NOT NULL,
    stage      text        NOT NULL,
    part       integer     NOT NULL DEFAULT 0,
    job_id     bigint      NOT NULL,
    attempt    integer     NOT NULL,
    output     jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (root_id, stage, part)
);

CREATE TABLE job_joins (
    id                 bigint      PRIMARY KEY,
    root_id            bigint      NOT NULL,
    total              integer     NOT NULL CONSTRAINT job_joins_total_check CHECK (total > 0),
    done               integer     NOT NULL DEFAULT 0,
    failed             integer     NOT NULL DEFAULT 0,
    then_type          text,
    then_payload       jsonb,
    then_tenant_id     text,
    then_priority      smallint,
    then_max_attempts  integer,
    then_lease_seconds integer,
    then_job_id        bigint,
    created_at         timestamptz NOT NULL DEFAULT now(),
    finished_at        timestamptz
);

-- Counting in a trigger makes every way a child can finish (completion, failure, reclaim on
-- the final attempt, cancel) count, in the same transaction as that status change. The
-- UPDATE of the join row serialises concurrent finishers, so exactly one of them sees the
-- last child finish and enqueues the next stage.
-- The function: sql/functions/pipeline_join_progress.sql.

CREATE TRIGGER jobs_join_progress
    AFTER UPDATE OF status ON jobs
    FOR EACH ROW
    WHEN (NEW.join_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION pipeline_join_progress();
