-- The job table, its indexes, the worker registry and the enqueue notification.

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
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz
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
-- The function: sql/functions/pipeline_notify_enqueued.sql.

CREATE TRIGGER jobs_notify_enqueued
    AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline_notify_enqueued();
