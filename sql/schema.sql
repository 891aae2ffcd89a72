-- The whole schema as the migrations leave it, but for the bodies of its functions: each one is
-- spelled once, in its own file of sql/functions/ (see sql/README.md). A test proves that this
-- file with those functions equals what the migrations and the functions build.

-- Queued and running jobs: the claim, heartbeats, completions and reclaim work here, and only
-- here. A job that finishes moves, in the statement that finishes it, into
-- pipeline.job_history (below); `pipeline.jobs` is the view over both, for readers.
CREATE TABLE pipeline.active_jobs (
    id            bigint      GENERATED ALWAYS AS IDENTITY
                  CONSTRAINT active_jobs_pkey PRIMARY KEY,
    type          text        NOT NULL,
    tenant_id     text,
    payload       jsonb       NOT NULL DEFAULT '{}'::jsonb,
    priority      smallint    NOT NULL DEFAULT 0,
    status        text        NOT NULL DEFAULT 'queued'
                  -- waiting: held by no worker until a signal or its deadline (0020)
                  CONSTRAINT active_jobs_status_check
                  CHECK (status IN ('queued', 'running', 'waiting')),
    attempts      integer     NOT NULL DEFAULT 0 CONSTRAINT active_jobs_attempts_check CHECK (attempts >= 0),
    max_attempts  integer     NOT NULL DEFAULT 5
                  CONSTRAINT active_jobs_max_attempts_check CHECK (max_attempts >= 1),
    run_after     timestamptz NOT NULL DEFAULT now(),
    leased_until  timestamptz,
    -- Stored per job so that the claim and the heartbeat need nothing but the row.
    lease_seconds integer     NOT NULL DEFAULT 300
                  CONSTRAINT active_jobs_lease_seconds_check CHECK (lease_seconds >= 1),
    worker_id     uuid,
    last_error    text,
    dedup_key     text,
    parent_id     bigint,
    -- NULL for a root job: the run is then the job itself, coalesce(root_id, id).
    root_id       bigint,
    -- The job whose fan-out this job belongs to; pipeline.joins counts its finished children.
    join_id       bigint,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz,
    -- Incremented by every claim and never decremented: (id, claims) names one claim for good,
    -- even when a crash reclaim or a shutdown release refunds the attempt.
    claims        integer     NOT NULL DEFAULT 0 CONSTRAINT active_jobs_claims_check CHECK (claims >= 0),
    -- Its lease once expired under it: it runs isolated, in a child process, from now on.
    suspect       boolean     NOT NULL DEFAULT false,
    -- Reclaims that refunded the attempt, and shutdown releases that did: both bounded.
    crash_reclaims integer    NOT NULL DEFAULT 0,
    releases      integer     NOT NULL DEFAULT 0,
    -- True while a running job counts against its tenant's slots (see pipeline.tenant_slots).
    holds_slot    boolean     NOT NULL DEFAULT false,
    -- The W3C traceparent of the OpenTelemetry span current when the job was enqueued
    -- (pipeline/tracing.py): a worker that traces runs the job in a child span of it. NULL
    -- when nothing was traced, which costs the row a bit of its null bitmap.
    traceparent   text,
    -- The job's rate-limit charges, [{"name", "key", "units"}] (0024, docs/limits.md); NULL for
    -- a stage without limits.
    limits        jsonb
);

-- Only ready rows are indexed for the claim: millions of finished rows never enter it. By
-- stage and tenant, so that the claim walks it one (stage, tenant) group at a time and never
-- scans a tenant's backlog.
CREATE INDEX jobs_ready ON pipeline.active_jobs (type, tenant_id, priority DESC, run_after, id)
    WHERE status = 'queued' AND tenant_id IS NOT NULL;
-- Jobs without a tenant apart: "tenant_id IS NULL" cannot give the claim its order from the
-- index above, and sorting a large untenanted backlog on every claim would scan it.
CREATE INDEX jobs_ready_untenanted ON pipeline.active_jobs (type, priority DESC, run_after, id)
    WHERE status = 'queued' AND tenant_id IS NULL;
-- Reclaim and the expired-lease view read running rows only.
CREATE INDEX jobs_running ON pipeline.active_jobs (leased_until) WHERE status = 'running';
-- Waiting jobs (0020): `pipeline jobs --status waiting`, however long the queued backlog.
CREATE INDEX jobs_waiting ON pipeline.active_jobs (id) WHERE status = 'waiting';
-- The children of a live fan-out (jobs show, the dashboard's job page).
CREATE INDEX jobs_parent ON pipeline.active_jobs (parent_id) WHERE parent_id IS NOT NULL;

-- Every claim, heartbeat and completion rewrites a row: vacuum early and often, and leave
-- room on each page so heartbeats can stay heap-only updates.
ALTER TABLE pipeline.active_jobs SET (
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 1
);

CREATE TABLE pipeline.workers (
    id          uuid        PRIMARY KEY,
    hostname    text        NOT NULL,
    pid         integer     NOT NULL,
    stages      text[]      NOT NULL,
    concurrency integer     NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    last_seen   timestamptz NOT NULL DEFAULT now(),
    -- {stage: fingerprint of its input model}, as this worker runs it (pipeline/worker/versions.py)
    stage_versions jsonb    NOT NULL DEFAULT '{}'
);

-- What workers know of each stage, recorded when they start (0015), so that a
-- producer or an operator command that does not import the stage's code can name it and have
-- a payload checked against its input model's JSON schema. One row per version of a stage:
-- version is the fingerprint of the input model each worker already advertises in
-- workers.stage_versions, so during a rolling deploy the old and the new model are both here,
-- and a live worker's stage_versions says which of them are running.
CREATE TABLE pipeline.stages (
    name          text        NOT NULL,
    version       text        NOT NULL,
    -- pydantic's model_json_schema() of the input model (validation mode) and of the output
    -- model (serialization mode); NULL when the model has none (a field type without one) or,
    -- for the output, when the stage returns nothing.
    input_schema  jsonb,
    output_schema jsonb,
    then_stage    text,
    -- The stage's defaults a job enqueued by name takes, as the last worker to record it had them.
    max_attempts  integer     NOT NULL,
    lease_seconds integer     NOT NULL,
    priority      smallint    NOT NULL,
    tenant_cap    integer,
    recorded_by   uuid        NOT NULL,
    hostname      text        NOT NULL,
    recorded_at   timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    -- The version of the stage's code (StageSpec.code_version) the last worker to record this
    -- row runs: what a rerun (pipeline/reruns.py) expects to make. NULL: recorded before 0021.
    code_version  text,
    -- The stage's limits as recorded (Limit.recorded()); NULL: none (0024).
    limits        jsonb,
    CONSTRAINT stages_pkey PRIMARY KEY (name, version)
);

-- A statement-level trigger, so that every way of inserting jobs (enqueue, bulk, plain SQL)
-- wakes idle workers, once per statement and job type, and only when the insert commits.
-- The function: sql/functions/notify_enqueued.sql.

CREATE TRIGGER jobs_notify_enqueued
    AFTER INSERT ON pipeline.active_jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline.notify_enqueued();

-- Only jobs inside a run are indexed: a standalone job (and every update of it) pays nothing.
CREATE INDEX jobs_run ON pipeline.active_jobs (root_id) WHERE root_id IS NOT NULL;

-- An output belongs to the job that made it: a re-run of the same job finds its own output,
-- and two jobs of one stage in a run never share one. part (a page number) stays unique within
-- (run, stage) when the stage declares it.
CREATE TABLE pipeline.outputs (
    root_id    bigint      NOT NULL,
    stage      text        NOT NULL,
    part       integer,
    job_id     bigint      NOT NULL,
    attempt    integer     NOT NULL,
    output     jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- The run's generation the output belongs to: 0 as the run first ran, k for its k-th
    -- rerun (pipeline.run_generations). Outputs are kept per generation, never overwritten.
    generation   integer   NOT NULL DEFAULT 0,
    -- The version of the stage's code that made it (StageSpec.code_version); NULL: stored
    -- before versions were recorded.
    code_version text,
    CONSTRAINT outputs_pkey PRIMARY KEY (job_id, generation)
);
CREATE UNIQUE INDEX outputs_part ON pipeline.outputs (root_id, stage, part, generation)
    WHERE part IS NOT NULL;
CREATE INDEX outputs_run ON pipeline.outputs (root_id, stage, generation);

-- One row per generation of a run after its first: a rerun (`pipeline runs rerun`), whose
-- first_job_id is the first job it enqueued. A job of the run belongs to the newest generation
-- whose first_job_id is at most its id: a rerun is only made when nothing of its run is queued or
-- running, so every job enqueued after it (what its jobs led to) takes a higher id from the same
-- sequence. The unique (run_id, stage, code_version) makes a rerun idempotent per (run, stage,
-- version).
CREATE TABLE pipeline.run_generations (
    run_id       bigint      NOT NULL,
    generation   integer     NOT NULL CONSTRAINT run_generations_generation_check
                                      CHECK (generation > 0),
    stage        text        NOT NULL,
    code_version text        NOT NULL,
    first_job_id bigint      NOT NULL,
    jobs         integer     NOT NULL,
    -- A rerun at the version its stage's stored outputs already have (--force).
    forced       boolean     NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT run_generations_pkey PRIMARY KEY (run_id, generation),
    CONSTRAINT run_generations_version_key UNIQUE (run_id, stage, code_version)
);

CREATE TABLE pipeline.joins (
    id                 bigint      PRIMARY KEY,
    root_id            bigint      NOT NULL,
    total              integer     NOT NULL CONSTRAINT joins_total_check CHECK (total > 0),
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
    finished_at        timestamptz,
    -- The then job's traceparent, as a job's (pipeline/tracing.py): the fanning-out job's span.
    then_traceparent   text,
    -- The then job's rate-limit charges, as a job's `limits` (0024).
    then_limits        jsonb
);

-- A child finishes by moving into pipeline.job_history, and a retry moves it back out: the
-- triggers that count both are made with the history tables, below.

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
-- It gives it back into pipeline.freed_slots, without a lock, and the pair's next claim
-- subtracts it from the counter under the lock it holds anyway (0018).

-- Operators' caps; a stage's default cap comes from the worker's code (@stage(tenant_cap=)).
CREATE TABLE pipeline.tenant_caps (
    tenant_id  text        NOT NULL,
    stage      text        NOT NULL,
    cap        integer     NOT NULL CONSTRAINT tenant_caps_cap_check CHECK (cap >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, stage)
);

-- Rate limits (0024, docs/limits.md): capacities per (limit, key or '*'); what each key
-- consumed per second, charged by a claim under the key's advisory lock.
CREATE TABLE pipeline.rate_limits (
    name        text        NOT NULL,
    key         text        NOT NULL DEFAULT '*',
    units       bigint      NOT NULL CONSTRAINT rate_limits_units_check CHECK (units >= 0),
    per_seconds integer     NOT NULL
                CONSTRAINT rate_limits_per_seconds_check CHECK (per_seconds BETWEEN 1 AND 86400),
    source      text        NOT NULL DEFAULT 'set'
                CONSTRAINT rate_limits_source_check CHECK (source IN ('set', 'code')),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, key)
);
CREATE TABLE pipeline.rate_limit_used (
    name   text   NOT NULL,
    key    text   NOT NULL,
    second bigint NOT NULL,
    units  bigint NOT NULL,
    PRIMARY KEY (name, key, second)
);

-- running: jobs of (tenant, stage) holding a slot now. A row exists while the pair has work:
-- the slot repair removes the rows of idle pairs (0010).
CREATE TABLE pipeline.tenant_slots (
    tenant_id text        NOT NULL,
    stage     text        NOT NULL,
    running   integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, stage)
);
ALTER TABLE pipeline.tenant_slots SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01);

-- Slots given back that no claim has subtracted from their pair's counter yet: a pair's jobs
-- holding a slot are its counter's running less the sum of n here. Written by the triggers
-- that free slots (insert only, so a completion never waits for a claim holding the counter);
-- read and deleted by the holder of the pair's counter lock (the claim, the slot repair) (0018).
CREATE TABLE pipeline.freed_slots (
    tenant_id text    NOT NULL,
    stage     text    NOT NULL,
    n         integer NOT NULL
);
CREATE INDEX freed_slots_pair ON pipeline.freed_slots (tenant_id, stage);
-- A few rows at a time, each deleted by the pair's next claim: vacuumed often.
ALTER TABLE pipeline.freed_slots SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_insert_scale_factor = 0.01
);

-- A tenant's counter row exists before its first claim, made by the statement that enqueued
-- its first job: were the claim to insert it, two claimers inserting two new tenants' rows in
-- opposite orders would wait on each other.
-- The function: sql/functions/add_slots.sql.

CREATE TRIGGER jobs_add_slots
    AFTER INSERT ON pipeline.active_jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline.add_slots();

-- A job that leaves running by an UPDATE (retry, release, reclaim) frees its slot row by row;
-- one that leaves by a DELETE (it finished, and moves into the history: the drain's path)
-- frees its statement's slots at once, a row of pipeline.freed_slots per pair (0018). A trigger
-- with transition tables cannot name columns, so a statement trigger on UPDATE would fire on
-- every claim and heartbeat; only a row trigger can clear the row's holds_slot.
-- The functions: sql/functions/free_slot.sql, sql/functions/free_deleted_slots.sql.

CREATE TRIGGER jobs_free_slot
    BEFORE UPDATE OF status ON pipeline.active_jobs
    FOR EACH ROW
    WHEN (OLD.holds_slot AND NEW.status IS DISTINCT FROM 'running')
    EXECUTE FUNCTION pipeline.free_slot();

CREATE TRIGGER jobs_free_deleted_slots
    AFTER DELETE ON pipeline.active_jobs
    REFERENCING OLD TABLE AS gone_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline.free_deleted_slots();

-- A running job's slot moves with it to its new tenant or stage (0010).
-- The function: sql/functions/move_slot.sql. Named to fire after jobs_free_slot.
CREATE TRIGGER jobs_move_slot
    BEFORE UPDATE OF tenant_id, type ON pipeline.active_jobs
    FOR EACH ROW
    WHEN (OLD.holds_slot AND NEW.holds_slot AND NEW.status = 'running'
          AND (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.type IS DISTINCT FROM NEW.type))
    EXECUTE FUNCTION pipeline.move_slot();

-- The function: sql/functions/truncate_slots.sql.
CREATE TRIGGER jobs_truncate_slots
    AFTER TRUNCATE ON pipeline.active_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline.truncate_slots();

-- Weighted fair share across tenants (0025). Each (tenant, stage) pair has a virtual time, its
-- pass, which a claim advances by n / weight for the n jobs it took; the claim serves the least
-- pass first, so under contention a tenant's share of the claims follows its weight, and what a
-- tenant without work (or at its cap) leaves goes to the others. The passes live apart from the
-- slot counters: a claim's later passes lock counters out of order without waiting (SKIP
-- LOCKED), its first waits for them in key order (0038, sql/functions/lock_slots.sql), and it
-- waits for the passes' rows, in key order, in one statement at its very end
-- (sql/functions/take_passes.sql), so no increment is lost and no two claims wait in a circle.

-- Operators' weights: a tenant's for every stage (stage NULL), or for one stage, which wins.
CREATE TABLE pipeline.tenant_weights (
    tenant_id  text             NOT NULL,
    stage      text,
    weight     double precision NOT NULL
        CONSTRAINT tenant_weights_weight_check CHECK (weight >= 0.000001 AND weight <= 1000000),
    updated_at timestamptz      NOT NULL DEFAULT now(),
    CONSTRAINT tenant_weights_key UNIQUE NULLS NOT DISTINCT (tenant_id, stage)
);

-- Per (tenant, stage) served: pass, its virtual time (jobs taken / weight, plus where it
-- (re)joined); floor, the least pass among the stage's pairs with work that the claim which
-- last advanced it saw (the claim's order starts a pair that (re)joins there: no credit from
-- idleness, pipeline.claim_groups); weight, tenant_weights' as it applies to the pair, copied
-- here so that the claim reads it with the pass (`pipeline tenants set-weight` writes both);
-- taken, the jobs claims took since the row was made.
-- A row exists while the pair is served: the slot repair removes idle pairs' rows.
CREATE TABLE pipeline.tenant_passes (
    tenant_id text             NOT NULL,
    stage     text             NOT NULL,
    pass      double precision,
    floor     double precision NOT NULL DEFAULT 0,
    weight    double precision NOT NULL DEFAULT 1,
    taken     bigint           NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, stage)
);
ALTER TABLE pipeline.tenant_passes SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01);

-- Budgets: a tenant's usage of one counter (or its cost in money, counter 'cost') per UTC day or
-- month, for every stage (stage NULL) or one. At warn x budget_limit an alert; at the limit the
-- tenant's claims of the stages it covers stop until a new period or a higher limit.
CREATE TABLE pipeline.budgets (
    tenant_id    text             NOT NULL,
    stage        text,
    counter      text             NOT NULL,
    per          text             NOT NULL
        CONSTRAINT budgets_per_check CHECK (per IN ('day', 'month')),
    budget_limit double precision NOT NULL
        CONSTRAINT budgets_limit_check CHECK (budget_limit >= 0 AND budget_limit < 'Infinity'),
    warn         double precision NOT NULL DEFAULT 0.8
        CONSTRAINT budgets_warn_check CHECK (warn > 0 AND warn <= 1),
    updated_at   timestamptz      NOT NULL DEFAULT now(),
    CONSTRAINT budgets_key UNIQUE NULLS NOT DISTINCT (tenant_id, stage, counter, per)
);

-- The claim. Groups of ready work are (stage, tenant) pairs, ordered by their best priority,
-- then least pass first: weighted fair share across tenants within a priority level, FIFO
-- within a tenant. Each group gets a share of the batch in proportion to its weight on a first
-- pass and what is left on a second; a capped group never more than its free slots.
CREATE TYPE pipeline.claim_group AS (
    type text, tenant_id text, cap integer,
    -- The group's best ready job, where the claim's picks start (0009).
    head_priority smallint, head_run_after timestamptz, head_id bigint
);

-- What pipeline.claim (and pipeline.claim_take, its taking) return of each job they take: the
-- columns the worker reads (pipeline/store.py's ClaimedJob), not the whole row (0033, 0034):
-- each row is copied into both functions' results, and the rows' other columns were 0.2-0.5 us
-- a job of the claiming backend's CPU (docs/measurements.md, 2026-12-03 (u)).
CREATE TYPE pipeline.claimed_job AS (
    id bigint, type text, tenant_id text, payload jsonb, priority smallint, attempts integer,
    max_attempts integer, lease_seconds integer, parent_id bigint, root_id bigint, claims integer,
    suspect boolean, traceparent text
);

-- The claim: sql/functions/claim.sql, and the parts it names.

-- The repair of drifted counters, in batches, which also removes idle pairs' rows:
-- sql/functions/repair_slots.sql.

-- Finished jobs (done, failed, cancelled), moved here from pipeline.active_jobs by the statement
-- that finishes each one, which deletes it there and inserts it here (sql/queries.py's fenced
-- writes). Partitioned by finish time, one partition per UTC day (job_history_YYYYMMDD, made
-- ahead by pipeline.make_history_partitions): retention detaches and drops a day at once
-- instead of deleting its rows one by one, and a read of a time window reads its days alone.
-- No default partition: see sql/functions/make_history_partitions.sql. The same columns as
-- pipeline.active_jobs, in the same order, with the same defaults.
CREATE TABLE pipeline.job_history (
    -- From the hot table's sequence, so that a row loaded here directly (a bulk load of old
    -- jobs, a test) never takes an id a job has.
    id            bigint      NOT NULL DEFAULT nextval('pipeline.active_jobs_id_seq'::regclass),
    type          text        NOT NULL,
    tenant_id     text,
    payload       jsonb       NOT NULL DEFAULT '{}'::jsonb,
    priority      smallint    NOT NULL DEFAULT 0,
    status        text        NOT NULL
                  CONSTRAINT job_history_status_check
                  CHECK (status IN ('done', 'failed', 'cancelled')),
    attempts      integer     NOT NULL DEFAULT 0,
    max_attempts  integer     NOT NULL DEFAULT 5,
    run_after     timestamptz NOT NULL DEFAULT now(),
    leased_until  timestamptz,
    lease_seconds integer     NOT NULL DEFAULT 300,
    worker_id     uuid,
    last_error    text,
    dedup_key     text,
    parent_id     bigint,
    root_id       bigint,
    join_id       bigint,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz NOT NULL,
    claims        integer     NOT NULL DEFAULT 0,
    suspect       boolean     NOT NULL DEFAULT false,
    crash_reclaims integer    NOT NULL DEFAULT 0,
    releases      integer     NOT NULL DEFAULT 0,
    holds_slot    boolean     NOT NULL DEFAULT false,
    traceparent   text,
    -- What the job's last attempt consumed (0023): its seconds, its CPU (both measured by the
    -- worker) and the counters its stage reported (NULL: none). See pipeline.job_attempts.
    wall_s        real,
    cpu_s         real,
    usage         jsonb
) PARTITION BY RANGE (finished_at);
-- On the parent, so that every partition has them. Not unique: a unique index on a partitioned
-- table must hold the partition key; the id is unique because it comes from active_jobs' identity
-- and a job is in one table at a time.
CREATE INDEX job_history_id ON pipeline.job_history (id);
CREATE INDEX job_history_run ON pipeline.job_history (root_id) WHERE root_id IS NOT NULL;
CREATE INDEX job_history_parent ON pipeline.job_history (parent_id) WHERE parent_id IS NOT NULL;
-- `pipeline jobs` filters (0007's jobs_tenant, jobs_failed and jobs_created, moved here).
CREATE INDEX job_history_tenant ON pipeline.job_history (tenant_id, id) WHERE tenant_id IS NOT NULL;
CREATE INDEX job_history_failed ON pipeline.job_history (id) WHERE status IN ('failed', 'cancelled');
-- A jobs list filtered by a stage (0032): its page whatever the other stages ran.
CREATE INDEX job_history_stage ON pipeline.job_history (type, id);
CREATE INDEX job_history_created ON pipeline.job_history USING brin (created_at)
    WITH (pages_per_range = 32);

-- Its days, each with its bounds as PostgreSQL spells them (FOR VALUES FROM ('...') TO ('...')),
-- for retention, the prune's reach and the rollups' fold (0037). lower is NULL for the legacy
-- partition of 0013, which begins at MINVALUE. pg_get_expr's 0: a range bound of constants names
-- no column, and read without its partition no day is opened, and so locked: named, a read of
-- 108 days in a new connection (a worker's start) took 14 instead of 5 ms, and waited for a day a
-- prune was detaching.
CREATE VIEW pipeline.history_days AS
SELECT i.inhrelid::regclass AS part,
       (regexp_match(b.bound, $$FROM \('([^']+)'\)$$))[1]::timestamptz AS lower,
       (regexp_match(b.bound, $$TO \('([^']+)'\)$$))[1]::timestamptz AS upper
FROM pg_inherits AS i
JOIN pg_class AS c ON c.oid = i.inhrelid
CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, 0) AS bound) AS b
WHERE i.inhparent = 'pipeline.job_history'::regclass;

-- The rows of runs that outlive the partition they finished in: when retention drops a day,
-- a run that is still going (a job of it active, or finished on a later day) or, with
-- --keep-failed, a failed one keeps its jobs of that day here. Small, and deleted run by run.
CREATE TABLE pipeline.job_history_kept (
    id            bigint      NOT NULL CONSTRAINT job_history_kept_pkey PRIMARY KEY,
    type          text        NOT NULL,
    tenant_id     text,
    payload       jsonb       NOT NULL,
    priority      smallint    NOT NULL,
    status        text        NOT NULL
                  CONSTRAINT job_history_kept_status_check
                  CHECK (status IN ('done', 'failed', 'cancelled')),
    attempts      integer     NOT NULL,
    max_attempts  integer     NOT NULL,
    run_after     timestamptz NOT NULL,
    leased_until  timestamptz,
    lease_seconds integer     NOT NULL,
    worker_id     uuid,
    last_error    text,
    dedup_key     text,
    parent_id     bigint,
    root_id       bigint,
    join_id       bigint,
    created_at    timestamptz NOT NULL,
    started_at    timestamptz,
    finished_at   timestamptz NOT NULL,
    claims        integer     NOT NULL,
    suspect       boolean     NOT NULL,
    crash_reclaims integer    NOT NULL,
    releases      integer     NOT NULL,
    holds_slot    boolean     NOT NULL,
    traceparent   text,
    wall_s        real,
    cpu_s         real,
    usage         jsonb
);
CREATE INDEX job_history_kept_run ON pipeline.job_history_kept (root_id) WHERE root_id IS NOT NULL;

-- Every job, wherever it is, for readers (`pipeline jobs`, runs, the dashboard, the status
-- views, anyone's own SQL). Writes go to the table a job is in. The CHECKs on status let the
-- planner leave out the arms that cannot hold a status asked for (constraint_exclusion
-- 'partition', the default, covers UNION ALL arms), and a finished_at range prunes partitions.
CREATE VIEW pipeline.jobs AS
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
       holds_slot, traceparent, NULL::real AS wall_s, NULL::real AS cpu_s, NULL::jsonb AS usage
FROM pipeline.active_jobs
UNION ALL
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
       holds_slot, traceparent, wall_s, cpu_s, usage
FROM pipeline.job_history
UNION ALL
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
       holds_slot, traceparent, wall_s, cpu_s, usage
FROM pipeline.job_history_kept;

-- A child finished (an insert here) or retried (a delete here or from the kept rows): its
-- join counts it (sql/functions/join_progress.sql). Inserts into job_history_kept are
-- retention's copies of rows counted already, so they count nothing.
CREATE TRIGGER job_history_join_finished
    AFTER INSERT ON pipeline.job_history
    FOR EACH ROW
    WHEN (NEW.join_id IS NOT NULL)
    EXECUTE FUNCTION pipeline.join_progress();
CREATE TRIGGER job_history_join_retried
    AFTER DELETE ON pipeline.job_history
    FOR EACH ROW
    WHEN (OLD.join_id IS NOT NULL)
    EXECUTE FUNCTION pipeline.join_progress();
CREATE TRIGGER job_history_kept_join_retried
    AFTER DELETE ON pipeline.job_history_kept
    FOR EACH ROW
    WHEN (OLD.join_id IS NOT NULL)
    EXECUTE FUNCTION pipeline.join_progress();

-- Runs (a root job and every job it led to) that have more than one job, each with its status,
-- kept exact by the statements that change its jobs (sql/functions/count_runs.sql) rather than
-- counted from the jobs on every read: `pipeline runs`, `pipeline status`, the dashboard and
-- the metrics read it. A job alone has no row: its run's status is the job's own. The row is
-- named after the root job and goes when retention deletes the run.
CREATE TABLE pipeline.runs (
    run_id         bigint      NOT NULL CONSTRAINT runs_pkey PRIMARY KEY,
    tenant_id      text,
    -- pipeline.run_status() of the counts below.
    status         text        NOT NULL
                   CONSTRAINT runs_status_check
                   CHECK (status IN ('running', 'waiting', 'done', 'failed', 'cancelled')),
    active         integer     NOT NULL DEFAULT 0,  -- queued, running or waiting jobs
    done           integer     NOT NULL DEFAULT 0,
    failed         integer     NOT NULL DEFAULT 0,
    cancelled      integer     NOT NULL DEFAULT 0,
    -- The first job that failed or was cancelled, and its error: why the run cannot end done.
    blocked_job_id bigint,
    blocked_reason text,
    created_at     timestamptz NOT NULL,  -- the root job's
    -- When it stopped running (ended, or blocked); NULL while running or waiting.
    finished_at    timestamptz,
    -- The part of `active` that waits for input (0020, sql/functions/count_waits.sql).
    waiting        integer     NOT NULL DEFAULT 0
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

-- Finished jobs counted per minute, stage and outcome (done, failed, cancelled), written by the
-- statement that moves jobs into the history or out of it (sql/functions/roll_up_finished.sql):
-- the status views, `pipeline status`, the dashboard's overview and the metrics read a day of
-- these instead of a day of the history, so they cost the same at a thousand finished jobs a
-- day or a million. Each finishing transaction adds to a shard no other open one adds to
-- (sql/functions/rollup_shard.sql, 0..15) so that concurrent
-- finishers never wait on each other's row; a reader sums the shards, which the Partitions
-- service folds into shard 0 once a minute is an hour old (rollups_fold_shards), so a day
-- costs a row per minute, stage and outcome. Kept ROLLUP_KEEP_S (two days,
-- pipeline/history.py): the views read the last 24 hours. A low fillfactor: the current
-- minute's rows are updated by every completion, and updates that stay on their page (HOT)
-- leave the primary key alone.
CREATE TABLE pipeline.finished_by_minute (
    minute       timestamptz      NOT NULL,
    stage        text             NOT NULL,
    status       text             NOT NULL,
    shard        smallint         NOT NULL,
    jobs         bigint           NOT NULL,
    attempts     bigint           NOT NULL,  -- charged attempts, summed
    max_attempts integer,
    timed        bigint           NOT NULL,  -- done jobs with a start time: the histogram's
    min_run_s    double precision,
    max_run_s    double precision,
    -- run times of the timed jobs, in the buckets of sql/functions/run_time_bucket.sql
    run_hist     integer[],
    CONSTRAINT finished_by_minute_pkey PRIMARY KEY (minute, stage, status, shard)
) WITH (fillfactor = 70);

-- The same, per tenant (untenanted jobs are in finished_by_minute alone): what a status read
-- scoped to one tenant sums, through its primary key, whatever the other tenants finish.
CREATE TABLE pipeline.tenant_finished_by_minute (
    tenant_id    text             NOT NULL,
    minute       timestamptz      NOT NULL,
    stage        text             NOT NULL,
    status       text             NOT NULL,
    shard        smallint         NOT NULL,
    jobs         bigint           NOT NULL,
    attempts     bigint           NOT NULL,
    max_attempts integer,
    timed        bigint           NOT NULL,
    min_run_s    double precision,
    max_run_s    double precision,
    run_hist     integer[],
    CONSTRAINT tenant_finished_by_minute_pkey
        PRIMARY KEY (tenant_id, minute, stage, status, shard)
) WITH (fillfactor = 70);
-- Retention deletes old minutes of every tenant.
CREATE INDEX tenant_finished_by_minute_minute ON pipeline.tenant_finished_by_minute (minute);
-- The rows the fold folds (shards other than 0), found without reading the folded ones (0028).
CREATE INDEX finished_by_minute_unfolded ON pipeline.finished_by_minute (minute)
    WHERE shard <> 0;
CREATE INDEX tenant_finished_by_minute_unfolded ON pipeline.tenant_finished_by_minute (minute)
    WHERE shard <> 0;

-- The days each stage finished jobs in, by outcome, once the rollups dropped their minutes
-- (rollups_drop_old folds them in; 0030 counted the history of its time): with the minutes
-- still held, where a jobs list by stage or outcome finds the days of the history to read
-- (sql/functions/finished_span.sql), so that a stage no job has reads none.
CREATE TABLE pipeline.finished_days (
    stage  text        NOT NULL,
    status text        NOT NULL,
    day    timestamptz NOT NULL,  -- the UTC midnight it begins at, its partition's lower bound
    CONSTRAINT finished_days_pkey PRIMARY KEY (stage, status, day)
);

-- A run-time histogram of jobs, and the sum of several. The functions:
-- sql/functions/run_time_histogram_add.sql, sql/functions/histogram_add.sql.
CREATE AGGREGATE pipeline.run_time_histogram(double precision, integer) (
    SFUNC = pipeline.run_time_histogram_add,
    STYPE = integer[]
);
CREATE AGGREGATE pipeline.histogram_sum(integer[]) (
    SFUNC = pipeline.histogram_add,
    STYPE = integer[]
);

-- The rollups follow the history's rows in and out. The function:
-- sql/functions/roll_up_finished.sql. On the
-- partitioned parent: every finishing write, retry and prune names it. Rows that retention
-- copies into job_history_kept were counted already; deleting them there counts them out.
CREATE TRIGGER job_history_roll_up_finished
    AFTER INSERT ON pipeline.job_history
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT
    EXECUTE FUNCTION pipeline.roll_up_finished();
CREATE TRIGGER job_history_roll_up_removed
    AFTER DELETE ON pipeline.job_history
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT
    EXECUTE FUNCTION pipeline.roll_up_finished();
CREATE TRIGGER job_history_kept_roll_up_removed
    AFTER DELETE ON pipeline.job_history_kept
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT
    EXECUTE FUNCTION pipeline.roll_up_finished();

-- "The same dedup key gives back the existing job, finished or not", for as long as the job is
-- kept: queued, running, or in the history until retention deletes its run. The enqueue
-- statement inserts the key first and the job only when the key was new, under the id it took.
CREATE TABLE pipeline.dedup_keys (
    type      text   NOT NULL,
    dedup_key text   NOT NULL,
    job_id    bigint NOT NULL,
    CONSTRAINT dedup_keys_pkey PRIMARY KEY (type, dedup_key)
);
-- Retention deletes a pruned run's keys by job.
CREATE INDEX dedup_keys_job ON pipeline.dedup_keys (job_id);

-- The blobs each run references (migration 0029): written with the jobs whose payloads name
-- them, deleted with the run by retention, which then sweeps the blobs no run references.
CREATE TABLE pipeline.blob_refs (
    blob_key text   NOT NULL,
    run_id   bigint NOT NULL,
    CONSTRAINT blob_refs_pkey PRIMARY KEY (blob_key, run_id)
);
CREATE INDEX blob_refs_run ON pipeline.blob_refs (run_id);  -- a pruned run's, by run
-- The blobs whose last reference went: the sweep's candidates (pipeline/maintenance/blob_sweep.py).
CREATE TABLE pipeline.blob_garbage (
    blob_key text        NOT NULL CONSTRAINT blob_garbage_pkey PRIMARY KEY,
    since    timestamptz NOT NULL DEFAULT now()
);

-- One attempt: (job_id, claims) is the claim's fencing token, so no two rows name the same
-- attempt. attempt is the charged attempt number as the claim counted it (a refunded attempt,
-- a crash reclaim's or a release's, keeps the number the next claim takes again). claimed_at
-- is the claim's time (the job's started_at), started_at when the worker began to run it (a
-- prefetched job waits for a runner in between), NULL when no worker said. logs: the lines
-- the stage logged in this attempt (pipeline/attempt_logs.py), written with the attempt's end;
-- the first ATTEMPT_LOG_CAP bytes of them, logs_dropped counts the lines past that. Deleted
-- with their job by retention (drop_history_partition, prune_runs).
CREATE TABLE pipeline.job_attempts (
    job_id       bigint      NOT NULL,
    claims       integer     NOT NULL,
    attempt      integer     NOT NULL,
    worker_id    uuid,
    claimed_at   timestamptz,
    started_at   timestamptz,
    ended_at     timestamptz NOT NULL DEFAULT now(),
    outcome      text        NOT NULL
                 CONSTRAINT job_attempts_outcome_check
                 CHECK (outcome IN ('done', 'retried', 'failed', 'timed_out', 'crashed', 'lost',
                                    'cancelled', 'given_back', 'waiting')),
    error        text,
    logs         text,
    logs_dropped integer     NOT NULL DEFAULT 0,
    -- What the attempt consumed (0023, pipeline/usage.py): seconds it ran and CPU it took
    -- (with its children's), measured by the worker, and the counters its stage reported
    -- with ctx.usage (numbers and labels; NULL: none). NULL seconds: no worker said (a
    -- reclaim, a cancel).
    wall_s       real,
    cpu_s        real,
    usage        jsonb,
    CONSTRAINT job_attempts_pkey PRIMARY KEY (job_id, claims)
);

-- One row per wait of a job, by name (0020): open while the job waits on it (resolved_at
-- NULL), then kept with how it ended, so that the stage, run again from the top, finds the
-- payload a signal delivered (or the timeout) for every wait it passed. A row is open exactly
-- while its job's status is 'waiting' on it: the statements that open and resolve one
-- (sql/queries.sql: wait, signal, time_out_waits) change the job's row in the same statement,
-- and a waiting job that leaves pipeline.active_jobs otherwise (a cancel) resolves its row as
-- cancelled (sql/functions/count_waits.sql). schema: the JSON schema of the model the stage
-- asked for, which signal() checks a payload against without the model's code. Deleted with
-- their job by retention (drop_history_partition, prune_runs).
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

-- Monitoring views: stable names that `pipeline status`, the Prometheus collector and anyone's
-- own SQL read. Each one reads only rows that a partial index already picks out (queued rows
-- through jobs_ready and jobs_ready_untenanted, running rows through jobs_running), and counts
-- finished jobs from the rollups of their minutes (pipeline.finished_by_minute), so its cost
-- follows the queue's backlog and its running jobs, never the finished rows behind them. "The
-- last hour" is the current minute and the 59 before it, "the last 24 hours" the current
-- minute and the 1,439 before it: whole minutes, up to a minute more than now() - 1 hour. Each
-- statement spells out the very predicate of the index it relies on: a partial index is only
-- used when the planner can prove the query's WHERE implies the index's.

-- Ready jobs (queued, run_after reached) per stage, and how long the oldest has waited.
CREATE VIEW pipeline.oldest_ready AS
SELECT r.type AS stage,
       count(*) AS ready,
       min(r.run_after) AS oldest_run_after,
       extract(epoch FROM now() - min(r.run_after))::double precision AS oldest_age_s
FROM (
    -- Two arms, one per ready index: "status = 'queued'" alone implies neither predicate.
    SELECT type, run_after FROM pipeline.active_jobs
    WHERE status = 'queued' AND tenant_id IS NOT NULL AND run_after <= now()
    UNION ALL
    SELECT type, run_after FROM pipeline.active_jobs
    WHERE status = 'queued' AND tenant_id IS NULL AND run_after <= now()
) AS r
GROUP BY r.type;
COMMENT ON VIEW pipeline.oldest_ready IS
    'Per stage: ready jobs (queued, run_after reached) and the age in seconds of the oldest.';

-- Failed jobs per stage and clock hour, over the current hour and the 23 before it. Hours
-- without a failure have no row.
CREATE VIEW pipeline.failures_hourly AS
SELECT stage, date_trunc('hour', minute) AS hour, sum(jobs)::bigint AS failed
FROM pipeline.finished_by_minute
WHERE status = 'failed'
  AND minute >= date_trunc('hour', now()) - interval '23 hours'
GROUP BY stage, date_trunc('hour', minute)
HAVING sum(jobs) > 0;
COMMENT ON VIEW pipeline.failures_hourly IS
    'Failed jobs per stage and clock hour, the current hour and the 23 before it; hours '
    'without failures have no row.';

-- Running jobs whose lease ran out: their worker died or stalled, and reclaim (every 30 s in
-- every worker) has not reached them yet. Many rows here, for long, means no worker reclaims.
CREATE VIEW pipeline.expired_leases AS
SELECT id, type AS stage, tenant_id, worker_id, attempts, max_attempts, leased_until,
       extract(epoch FROM now() - leased_until)::double precision AS expired_for_s
FROM pipeline.active_jobs
WHERE status = 'running' AND leased_until < now();
COMMENT ON VIEW pipeline.expired_leases IS
    'Running jobs whose lease has expired (not reclaimed yet), with seconds since it did.';

-- Charged runs per completed job: 1.0 means first-time success. Refunded runs (crash reclaims,
-- shutdown releases) are not counted, as in jobs.attempts.
CREATE VIEW pipeline.attempts AS
SELECT r.stage,
       coalesce(sum(r.jobs) FILTER (WHERE r.last_hour), 0)::bigint AS completed_1h,
       (sum(r.attempts) FILTER (WHERE r.last_hour)
        / nullif(sum(r.jobs) FILTER (WHERE r.last_hour), 0))::double precision AS avg_attempts_1h,
       max(r.max_attempts) FILTER (WHERE r.last_hour) AS max_attempts_1h,
       sum(r.jobs)::bigint AS completed_24h,
       (sum(r.attempts) / nullif(sum(r.jobs), 0))::double precision AS avg_attempts_24h,
       max(r.max_attempts) AS max_attempts_24h
FROM (
    SELECT stage, jobs, attempts, max_attempts,
           minute >= date_trunc('minute', now()) - interval '59 minutes' AS last_hour
    FROM pipeline.finished_by_minute
    WHERE status = 'done' AND minute >= date_trunc('minute', now()) - interval '1439 minutes'
) AS r
GROUP BY r.stage
HAVING sum(r.jobs) > 0;
COMMENT ON VIEW pipeline.attempts IS
    'Per stage: jobs completed in the last hour and day, and their charged attempts '
    '(average, most).';

-- How long the successful run of a job took (finished_at - started_at; started_at is set by
-- every claim, so earlier failed runs do not count), for jobs done in the last hour. p50 and
-- p95 are estimates from the rollups' histograms, within 13% of the exact percentile
-- (sql/functions/histogram_quantile.sql); max_s is exact.
CREATE VIEW pipeline.durations AS
SELECT stage,
       sum(timed)::bigint AS completed,
       pipeline.histogram_quantile(pipeline.histogram_sum(run_hist), 0.5, min(min_run_s),
                                    max(max_run_s))
           AS p50_s,
       pipeline.histogram_quantile(pipeline.histogram_sum(run_hist), 0.95, min(min_run_s),
                                    max(max_run_s))
           AS p95_s,
       max(max_run_s) AS max_s
FROM pipeline.finished_by_minute
WHERE status = 'done' AND minute >= date_trunc('minute', now()) - interval '59 minutes'
  AND timed <> 0
GROUP BY stage
HAVING sum(timed) > 0;
COMMENT ON VIEW pipeline.durations IS
    'Per stage: run time in seconds (p50, p95, max) of jobs done in the last hour.';

-- Queued (ready or not), running and recently failed jobs per stage. Finished jobs are counted
-- over a window only: an all-time count would read every finished row there is.
CREATE VIEW pipeline.stage_counts AS
SELECT p.stage,
       sum(p.queued)::bigint AS queued,
       sum(p.running)::bigint AS running,
       sum(p.failed_1h)::bigint AS failed_1h,
       sum(p.failed_24h)::bigint AS failed_24h
FROM (
    SELECT type AS stage, count(*) AS queued, 0 AS running, 0 AS failed_1h, 0 AS failed_24h
    FROM pipeline.active_jobs WHERE status = 'queued' AND tenant_id IS NOT NULL GROUP BY type
    UNION ALL
    SELECT type, count(*), 0, 0, 0
    FROM pipeline.active_jobs WHERE status = 'queued' AND tenant_id IS NULL GROUP BY type
    UNION ALL
    SELECT type, 0, count(*), 0, 0
    FROM pipeline.active_jobs WHERE status = 'running' GROUP BY type
    UNION ALL
    SELECT stage, 0, 0,
           coalesce(sum(jobs) FILTER (
               WHERE minute >= date_trunc('minute', now()) - interval '59 minutes'), 0)::bigint,
           sum(jobs)::bigint
    FROM pipeline.finished_by_minute
    WHERE status = 'failed' AND minute >= date_trunc('minute', now()) - interval '1439 minutes'
    GROUP BY stage
    HAVING sum(jobs) > 0
) AS p
GROUP BY p.stage;
COMMENT ON VIEW pipeline.stage_counts IS
    'Per stage: queued and running jobs now, failed jobs in the last hour and day.';

-- Running jobs against caps, per (tenant, stage), for the pairs the database knows to be
-- capped: an operator's cap in pipeline.tenant_caps, or slots held now. A default cap (@stage(tenant_cap=)
-- or `pipeline worker --tenant-cap`) lives in the workers, not in the database: such a pair
-- shows up only while it holds slots, and with cap NULL. queued probes jobs_ready once per pair.
CREATE VIEW pipeline.tenant_load AS
SELECT k.tenant_id, k.stage, k.running, k.cap, k.cap - k.running AS free,
       (SELECT count(*) FROM pipeline.active_jobs j
        WHERE j.status = 'queued' AND j.tenant_id = k.tenant_id AND j.type = k.stage) AS queued
FROM (
    SELECT coalesce(c.tenant_id, s.tenant_id) AS tenant_id,
           coalesce(c.stage, s.stage) AS stage,
           coalesce(s.running, 0) AS running,
           c.cap
    FROM pipeline.tenant_caps c
    -- What the pairs hold: each counter less its slots given back (0018).
    FULL JOIN (
        SELECT t.tenant_id, t.stage,
               greatest(t.running - coalesce((SELECT sum(f.n) FROM pipeline.freed_slots f
                                              WHERE f.tenant_id = t.tenant_id
                                                AND f.stage = t.stage), 0), 0)::integer
                   AS running
        FROM pipeline.tenant_slots t
    ) AS s ON s.tenant_id = c.tenant_id AND s.stage = c.stage
    WHERE c.cap IS NOT NULL OR s.running > 0
) AS k;
COMMENT ON VIEW pipeline.tenant_load IS
    'Per capped (tenant, stage): jobs holding a slot, the cap from tenant_caps and queued jobs; '
    'cap is NULL when it is a default that only the workers hold.';

-- Workers that beat within 180 s (three beats at the default 60 s heartbeat), with the jobs
-- they hold. A worker that stops beating drops out of here; the pruner deletes its row later.
CREATE VIEW pipeline.live_workers AS
SELECT w.id, w.hostname, w.pid, w.stages, w.concurrency, w.started_at, w.last_seen,
       extract(epoch FROM now() - w.last_seen)::double precision AS seen_ago_s,
       coalesce(f.in_flight, 0) AS in_flight
FROM pipeline.workers w
LEFT JOIN (
    SELECT worker_id, count(*) AS in_flight FROM pipeline.active_jobs
    WHERE status = 'running' GROUP BY worker_id
) AS f ON f.worker_id = w.id
WHERE w.last_seen > now() - interval '180 seconds';
COMMENT ON VIEW pipeline.live_workers IS
    'Workers whose heartbeat is at most 180 s old, with the running jobs each one holds.';

-- Recurring schedules: declared in code with pipeline.schedule() (synced when a worker starts)
-- or added with `pipeline schedule add`. Any worker's scheduler fires a due row: it locks the
-- row FOR UPDATE SKIP LOCKED, inserts the fire time's job under the jobs table's dedup key and
-- advances next_fire_at in one transaction (sql/queries_schedules.sql), so there is no leader.
CREATE TABLE pipeline.schedules (
    name          text        PRIMARY KEY,
    stage         text        NOT NULL,
    -- Exactly one of them: a cron expression read in `timezone`, or a period in seconds.
    cron          text,
    every_s       double precision CONSTRAINT schedules_every_check CHECK (every_s > 0),
    timezone      text        NOT NULL DEFAULT 'UTC',
    payload       jsonb       NOT NULL DEFAULT '{}'::jsonb,
    tenant_id     text,
    -- Fire times missed while no scheduler ran that are still enqueued: the latest ones.
    catch_up      integer     NOT NULL DEFAULT 1
                  CONSTRAINT schedules_catch_up_check CHECK (catch_up >= 1),
    -- 'code': upserted by sync_schedules, deleted once the code no longer declares it.
    -- 'cli': made by `pipeline schedule add`, kept until `pipeline schedule remove`.
    source        text        NOT NULL
                  CONSTRAINT schedules_source_check CHECK (source IN ('code', 'cli')),
    paused        boolean     NOT NULL DEFAULT false,
    -- The earliest fire time not yet enqueued; it is due once it is past.
    next_fire_at  timestamptz NOT NULL,
    last_fired_at timestamptz,
    last_job_id   bigint,
    -- Why the last due fire time enqueued nothing (a payload the stage no longer accepts).
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT schedules_timing_check CHECK ((cron IS NULL) <> (every_s IS NULL))
);
-- The scheduler's tick reads due, unpaused rows only.
CREATE INDEX schedules_due ON pipeline.schedules (next_fire_at) WHERE NOT paused;

-- Schedules (0005) with their next fire time: due_in_s is negative once that time has passed and
-- no scheduler has fired it yet (a long negative one means no worker runs the scheduler).
CREATE VIEW pipeline.schedule_next AS
SELECT name, stage, tenant_id, cron, every_s, timezone, paused, next_fire_at,
       extract(epoch FROM next_fire_at - now())::double precision AS due_in_s,
       last_fired_at, last_job_id, last_error
FROM pipeline.schedules;
COMMENT ON VIEW pipeline.schedule_next IS
    'Every schedule with its next fire time and seconds until it (negative: due, not fired yet).';

-- Usage summed per UTC day, tenant, stage and counter (wall_s and cpu_s among the counters):
-- what `pipeline usage`, the dashboard, the metrics and budgets (pipeline.tenant_usage) read,
-- a few rows a day whatever the history holds. Kept by statement-level triggers on the
-- attempts and the history (sql/functions/roll_up_usage.sql), in the transaction that ends
-- each attempt. Only ever added to: what an attempt consumed stays consumed when its job is
-- retried or pruned. Shards as in pipeline.finished_by_minute (sql/functions/rollup_shard.sql),
-- so concurrent finishers never wait on one row; readers sum them.
-- attempts: how many attempts added to the row. tenant_id NULL: untenanted jobs.
CREATE TABLE pipeline.usage_by_day (
    day       date             NOT NULL,
    tenant_id text,
    stage     text             NOT NULL,
    counter   text             NOT NULL,
    shard     smallint         NOT NULL,
    amount    double precision NOT NULL,
    attempts  bigint           NOT NULL,
    -- A tenant's counter since a day (tenant_usage, in the claim of a tenant with a budget):
    -- one range of this key.
    CONSTRAINT usage_by_day_key
        UNIQUE NULLS NOT DISTINCT (tenant_id, counter, day, stage, shard)
) WITH (fillfactor = 70);
-- Reports of a window across tenants (`pipeline usage --since`, the metrics).
CREATE INDEX usage_by_day_day ON pipeline.usage_by_day (day);

CREATE TRIGGER job_history_roll_up_usage
    AFTER INSERT ON pipeline.job_history
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT
    EXECUTE FUNCTION pipeline.roll_up_usage();
-- An attempt's row that is not a done one (whose job's history row counts it), with usage.
CREATE TRIGGER job_attempts_roll_up_usage
    AFTER INSERT ON pipeline.job_attempts
    FOR EACH ROW
    WHEN (NEW.outcome <> 'done'
          AND (NEW.wall_s IS NOT NULL OR NEW.cpu_s IS NOT NULL OR NEW.usage IS NOT NULL))
    EXECUTE FUNCTION pipeline.roll_up_usage();

-- What a unit of a counter costs (`pipeline usage prices set`), in one currency: reports show
-- money where a counter has a price.
CREATE TABLE pipeline.prices (
    counter    text             NOT NULL CONSTRAINT prices_pkey PRIMARY KEY,
    price      double precision NOT NULL CONSTRAINT prices_price_check CHECK (price >= 0),
    currency   text             NOT NULL,
    updated_at timestamptz      NOT NULL DEFAULT now()
);
