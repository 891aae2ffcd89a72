-- The whole schema as the migrations leave it; a test proves the two equal.

CREATE TABLE jobs (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    type          text        NOT NULL,
    tenant_id     text,
    payload       jsonb       NOT NULL DEFAULT '{}'::jsonb,
    priority      smallint    NOT NULL DEFAULT 0,
    status        text        NOT NULL DEFAULT 'queued'
                  CONSTRAINT jobs_status_check
                  CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    attempts      integer     NOT NULL DEFAULT 0 CONSTRAINT jobs_attempts_check CHECK (attempts >= 0),
    max_attempts  integer     NOT NULL DEFAULT 5
                  CONSTRAINT jobs_max_attempts_check CHECK (max_attempts >= 1),
    run_after     timestamptz NOT NULL DEFAULT now(),
    leased_until  timestamptz,
    -- Stored per job so that the claim and the heartbeat need nothing but the row.
    lease_seconds integer     NOT NULL DEFAULT 300
                  CONSTRAINT jobs_lease_seconds_check CHECK (lease_seconds >= 1),
    worker_id     uuid,
    last_error    text,
    dedup_key     text,
    parent_id     bigint,
    -- NULL for a root job: the run is then the job itself, coalesce(root_id, id).
    root_id       bigint,
    -- The job whose fan-out this job belongs to; job_joins counts its finished children.
    join_id       bigint,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz,
    -- Incremented by every claim and never decremented: (id, claims) names one claim for good,
    -- even when a crash reclaim or a shutdown release refunds the attempt.
    claims        integer     NOT NULL DEFAULT 0 CONSTRAINT jobs_claims_check CHECK (claims >= 0),
    -- Its lease once expired under it: it runs isolated, in a child process, from now on.
    suspect       boolean     NOT NULL DEFAULT false,
    -- Reclaims that refunded the attempt, and shutdown releases that did: both bounded.
    crash_reclaims integer    NOT NULL DEFAULT 0,
    releases      integer     NOT NULL DEFAULT 0
);

-- Only ready rows are indexed for the claim: millions of finished rows never enter it.
CREATE INDEX jobs_ready ON jobs (priority DESC, run_after, id) WHERE status = 'queued';
-- Reclaim and the expired-lease view read running rows only.
CREATE INDEX jobs_running ON jobs (leased_until) WHERE status = 'running';
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE status IN ('done', 'failed', 'cancelled');
CREATE INDEX jobs_parent ON jobs (parent_id) WHERE parent_id IS NOT NULL;
CREATE UNIQUE INDEX jobs_dedup ON jobs (type, dedup_key) WHERE dedup_key IS NOT NULL;

-- Every claim, heartbeat and completion rewrites a row: vacuum early and often, and leave
-- room on each page so heartbeats can stay heap-only updates.
ALTER TABLE jobs SET (
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 1
);

CREATE TABLE pipeline_workers (
    id          uuid        PRIMARY KEY,
    hostname    text        NOT NULL,
    pid         integer     NOT NULL,
    stages      text[]      NOT NULL,
    concurrency integer     NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    last_seen   timestamptz NOT NULL DEFAULT now()
);

-- A statement-level trigger, so that every way of inserting jobs (enqueue, bulk, plain SQL)
-- wakes idle workers, once per statement and job type, and only when the insert commits.
CREATE FUNCTION pipeline_notify_enqueued() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pipeline_jobs', t.type)
    FROM (SELECT DISTINCT type FROM new_jobs WHERE status = 'queued' AND run_after <= now()) AS t;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify_enqueued
    AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline_notify_enqueued();

-- Only jobs inside a run are indexed: a standalone job (and every update of it) pays nothing.
CREATE INDEX jobs_run ON jobs (root_id) WHERE root_id IS NOT NULL;

-- An output belongs to the job that made it: a re-run of the same job finds its own output,
-- and two jobs of one stage in a run never share one. part (a page number) stays unique within
-- (run, stage) when the stage declares it.
CREATE TABLE job_outputs (
    root_id    bigint      NOT NULL,
    stage      text        NOT NULL,
    part       integer,
    job_id     bigint      NOT NULL,
    attempt    integer     NOT NULL,
    output     jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT job_outputs_pkey PRIMARY KEY (job_id)
);
CREATE UNIQUE INDEX job_outputs_part ON job_outputs (root_id, stage, part) WHERE part IS NOT NULL;
CREATE INDEX job_outputs_run ON job_outputs (root_id, stage);

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
CREATE FUNCTION pipeline_join_progress() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    j job_joins%ROWTYPE;
    next_id bigint;
BEGIN
    IF NEW.status IN ('done', 'failed', 'cancelled') THEN
        UPDATE job_joins
        SET done = done + (NEW.status = 'done')::int,
            failed = failed + (NEW.status <> 'done')::int
        WHERE id = NEW.join_id
        RETURNING * INTO j;
    ELSIF OLD.status IN ('done', 'failed', 'cancelled') THEN
        -- A finished child went back to the queue (jobs retry): it is not finished any more.
        UPDATE job_joins
        SET done = done - (OLD.status = 'done')::int,
            failed = failed - (OLD.status <> 'done')::int,
            finished_at = NULL
        WHERE id = NEW.join_id;
        RETURN NULL;
    ELSE
        RETURN NULL;
    END IF;
    IF j.id IS NULL OR j.done + j.failed < j.total THEN
        RETURN NULL;
    END IF;
    IF j.failed = 0 AND j.then_type IS NOT NULL AND j.then_job_id IS NULL THEN
        INSERT INTO jobs (type, tenant_id, payload, priority, max_attempts, lease_seconds,
                          parent_id, root_id)
        VALUES (j.then_type, j.then_tenant_id, j.then_payload, j.then_priority,
                j.then_max_attempts, j.then_lease_seconds, j.id, j.root_id)
        RETURNING id INTO next_id;
    END IF;
    UPDATE job_joins SET then_job_id = coalesce(then_job_id, next_id), finished_at = now()
    WHERE id = j.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_join_progress
    AFTER UPDATE OF status ON jobs
    FOR EACH ROW
    WHEN (NEW.join_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION pipeline_join_progress();
