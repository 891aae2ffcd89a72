-- Per-tenant caps on running jobs per stage, exact under concurrent claims, and fair claiming
-- across tenants.
--
-- Why a counter row per (tenant, stage), locked by the claim: a count of running rows taken
-- inside a claim cannot see other claimers' uncommitted claims, so two claimers at once both
-- see room and overshoot. The counter row is locked FOR UPDATE SKIP LOCKED by the claim for
-- its whole transaction, so claims of one (tenant, stage) take turns (a busy one is skipped,
-- not waited for), and the count they read includes every committed claim. A trigger gives the
-- slot back in the very statement that moves a job out of running, for whatever reason
-- (complete, fail, retry, release, reclaim, cancel, timeout, a hand-written UPDATE or DELETE),
-- and only for rows that statement really changed: nothing can free a slot twice or forget it.

-- Operators' caps; a stage's default cap comes from the worker's code (@stage(tenant_cap=)).
CREATE TABLE tenant_caps (
    tenant_id  text        NOT NULL,
    stage      text        NOT NULL,
    cap        integer     NOT NULL CONSTRAINT tenant_caps_cap_check CHECK (cap >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, stage)
);

-- running: jobs of (tenant, stage) holding a slot now. served_at: the last claim that served
-- the pair, which orders tenants least recently served first.
CREATE TABLE tenant_slots (
    tenant_id text        NOT NULL,
    stage     text        NOT NULL,
    running   integer     NOT NULL DEFAULT 0,
    served_at timestamptz,
    PRIMARY KEY (tenant_id, stage)
);
ALTER TABLE tenant_slots SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01);
-- Jobs enqueued before this migration get their counter rows now (later ones by a trigger).
INSERT INTO tenant_slots (tenant_id, stage)
SELECT DISTINCT tenant_id, type FROM jobs WHERE tenant_id IS NOT NULL AND status = 'queued';

-- True while a running job counts against its tenant's slots.
ALTER TABLE jobs ADD COLUMN holds_slot boolean NOT NULL DEFAULT false;

-- Ready jobs by stage and tenant: the claim walks it one (stage, tenant) group at a time, so
-- a tenant's backlog, capped or not, costs one probe and is never scanned.
DROP INDEX jobs_ready;
CREATE INDEX jobs_ready ON jobs (type, tenant_id, priority DESC, run_after, id)
    WHERE status = 'queued' AND tenant_id IS NOT NULL;
-- Jobs without a tenant apart: "tenant_id IS NULL" cannot give the claim its order from the
-- index above, and sorting a large untenanted backlog on every claim would scan it.
CREATE INDEX jobs_ready_untenanted ON jobs (type, priority DESC, run_after, id)
    WHERE status = 'queued' AND tenant_id IS NULL;

-- A tenant's counter row exists before its first claim, made by the statement that enqueued
-- its first job: were the claim to insert it, two claimers inserting two new tenants' rows in
-- opposite orders would wait on each other.
-- The function: sql/functions/pipeline_add_slots.sql.

CREATE TRIGGER jobs_add_slots
    AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline_add_slots();

-- The function: sql/functions/pipeline_free_slot.sql.

CREATE TRIGGER jobs_free_slot
    BEFORE UPDATE OF status ON jobs
    FOR EACH ROW
    WHEN (OLD.holds_slot AND NEW.status IS DISTINCT FROM 'running')
    EXECUTE FUNCTION pipeline_free_slot();

CREATE TRIGGER jobs_free_slot_on_delete
    BEFORE DELETE ON jobs
    FOR EACH ROW
    WHEN (OLD.holds_slot)
    EXECUTE FUNCTION pipeline_free_slot();

-- The claim. Groups of ready work are (stage, tenant) pairs, ordered by their best priority,
-- then least recently served first: round-robin across tenants within a priority level, FIFO
-- within a tenant. Each group gets a fair share of the batch on a first pass and what is left
-- on a second; a capped group never more than its free slots.
CREATE TYPE pipeline_claim_group AS (type text, tenant_id text, cap integer);

-- The claim: sql/functions/pipeline_claim.sql, and the parts it names.

-- Recounts each pair from the jobs table under its row lock; returns the pairs it corrected.
-- The function: sql/functions/pipeline_repair_slots.sql.
