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
CREATE FUNCTION pipeline_add_slots() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tenant_slots (tenant_id, stage)
    SELECT DISTINCT n.tenant_id, n.type FROM new_jobs n
    WHERE n.tenant_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM tenant_slots s
                      WHERE s.tenant_id = n.tenant_id AND s.stage = n.type)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_add_slots
    AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline_add_slots();

CREATE FUNCTION pipeline_free_slot() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Never below zero: a drift is the repair's to report, never a reason to refuse a write.
    UPDATE tenant_slots SET running = greatest(running - 1, 0)
    WHERE tenant_id = OLD.tenant_id AND stage = OLD.type;
    IF TG_OP = 'UPDATE' THEN
        NEW.holds_slot := false;
        RETURN NEW;
    END IF;
    RETURN OLD;
END
$$;

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

CREATE FUNCTION pipeline_claim(
    p_types text[], p_limit integer, p_worker uuid, p_cap_stages text[], p_caps integer[]
) RETURNS SETOF jobs
LANGUAGE plpgsql AS $$
DECLARE
    groups pipeline_claim_group[];
    finished boolean[];
    grp pipeline_claim_group;
    n integer;
    i integer;
    quota integer;
    remaining integer := p_limit;
    take integer;
    got integer;
    cap integer;
    used integer;
    shares integer[];
    budget integer;
    batch_types text[] := '{}';
    batch_tenants text[] := '{}';
    batch_takes integer[] := '{}';
BEGIN
    -- Distinct tenants with queued jobs per stage, found by skipping through jobs_ready one
    -- tenant at a time; then each one's best ready job, for the order. The skips order by
    -- (tenant_id, priority DESC), which only jobs_ready gives: an index on tenant_id alone
    -- (jobs_tenant) would tempt the planner into walking every row of a stage with none queued.
    groups := ARRAY(
        SELECT ROW(g.type, g.tenant_id, g.cap)::pipeline_claim_group
        FROM (
            WITH RECURSIVE tenants(type, tenant_id) AS (
                SELECT t.type,
                       (SELECT j.tenant_id FROM jobs j
                        WHERE j.status = 'queued' AND j.type = t.type
                          AND j.tenant_id IS NOT NULL
                        ORDER BY j.tenant_id, j.priority DESC LIMIT 1)
                FROM unnest(p_types) AS t(type)
                UNION ALL
                SELECT tn.type,
                       (SELECT j.tenant_id FROM jobs j
                        WHERE j.status = 'queued' AND j.type = tn.type
                          AND j.tenant_id > tn.tenant_id
                        ORDER BY j.tenant_id, j.priority DESC LIMIT 1)
                FROM tenants tn
                WHERE tn.tenant_id IS NOT NULL
            )
            SELECT tn.type, tn.tenant_id, head.priority, head.run_after, s.served_at,
                   coalesce(c.cap, p_caps[array_position(p_cap_stages, tn.type)]) AS cap,
                   coalesce(s.running, 0) AS running
            FROM tenants tn
            CROSS JOIN LATERAL (
                SELECT j.priority, j.run_after FROM jobs j
                WHERE j.status = 'queued' AND j.type = tn.type AND j.tenant_id = tn.tenant_id
                  AND j.run_after <= now()
                ORDER BY j.priority DESC, j.run_after, j.id
                LIMIT 1
            ) AS head
            LEFT JOIN tenant_slots s ON s.tenant_id = tn.tenant_id AND s.stage = tn.type
            LEFT JOIN tenant_caps c ON c.tenant_id = tn.tenant_id AND c.stage = tn.type
            WHERE tn.tenant_id IS NOT NULL
            UNION ALL
            SELECT t.type, NULL, head.priority, head.run_after, NULL, NULL, 0
            FROM unnest(p_types) AS t(type)
            CROSS JOIN LATERAL (
                SELECT j.priority, j.run_after FROM jobs j
                WHERE j.status = 'queued' AND j.type = t.type AND j.tenant_id IS NULL
                  AND j.run_after <= now()
                ORDER BY j.priority DESC, j.run_after, j.id
                LIMIT 1
            ) AS head
        ) AS g
        -- A pair at its cap is left out here, without taking its lock (a write): a tenant
        -- paused or full with a huge backlog costs the claim two index probes, no more. A
        -- stale count can only leave out a pair whose slot has just been freed, until the
        -- next claim; the count that decides is read again under the lock below.
        WHERE g.cap IS NULL OR g.running < g.cap
        ORDER BY g.priority DESC, g.served_at NULLS FIRST, g.run_after, g.tenant_id
    );
    n := coalesce(array_length(groups, 1), 0);
    IF n = 0 THEN
        RETURN;
    END IF;
    finished := array_fill(false, ARRAY[n]);
    quota := greatest(1, ceil(p_limit::numeric / n)::integer);
    -- First-pass shares in the fair order, until the batch is spent.
    shares := array_fill(0, ARRAY[n]);
    budget := p_limit;
    FOR i IN 1..n LOOP
        shares[i] := least(quota, budget);
        budget := budget - shares[i];
        grp := groups[i];
        IF shares[i] > 0 AND grp.tenant_id IS NOT NULL AND grp.cap IS NULL THEN
            batch_types := batch_types || grp.type;
            batch_tenants := batch_tenants || grp.tenant_id;
            batch_takes := batch_takes || shares[i];
        END IF;
    END LOOP;

    -- Uncapped tenants take their shares in one statement, however many have work: no slot
    -- to lock, so nothing to do one tenant at a time.
    IF array_length(batch_types, 1) > 0 THEN
        RETURN QUERY
        WITH picked AS (
            SELECT p.id
            FROM unnest(batch_types, batch_tenants, batch_takes) AS w(type, tenant_id, take)
            CROSS JOIN LATERAL (
                SELECT j.id FROM jobs j
                WHERE j.status = 'queued' AND j.type = w.type AND j.tenant_id = w.tenant_id
                  AND j.run_after <= now()
                ORDER BY j.priority DESC, j.run_after, j.id
                LIMIT w.take
                FOR UPDATE SKIP LOCKED
            ) AS p
        ),
        claimed AS (
            UPDATE jobs AS j
            SET status = 'running', attempts = j.attempts + 1, claims = j.claims + 1,
                leased_until = now() + make_interval(secs => j.lease_seconds),
                worker_id = p_worker, started_at = now(), holds_slot = false
            -- By primary key, whatever the planner guesses of the batch's size: a generic plan
            -- of a join here would hash the whole table.
            WHERE j.id = ANY (ARRAY(SELECT picked.id FROM picked))
            RETURNING j.*
        ),
        -- Bumped only where no one else holds the row: waiting here, in whatever order the
        -- rows come, could deadlock two claimers; a missed bump costs a little fairness.
        served AS (
            UPDATE tenant_slots AS s SET served_at = clock_timestamp()
            FROM (
                SELECT s2.tenant_id, s2.stage FROM tenant_slots s2
                WHERE (s2.stage, s2.tenant_id) IN (SELECT c.type, c.tenant_id FROM claimed c)
                FOR UPDATE OF s2 SKIP LOCKED
            ) AS l
            WHERE s.tenant_id = l.tenant_id AND s.stage = l.stage
        )
        SELECT * FROM claimed;
        GET DIAGNOSTICS got = ROW_COUNT;
        remaining := remaining - got;
    END IF;

    FOR pass IN 1..2 LOOP
        FOR i IN 1..n LOOP
            EXIT WHEN remaining <= 0;
            CONTINUE WHEN finished[i];
            grp := groups[i];
            IF pass = 1 AND (shares[i] = 0
                             OR (grp.tenant_id IS NOT NULL AND grp.cap IS NULL)) THEN
                CONTINUE;  -- no share, or taken by the statement above
            END IF;
            take := CASE WHEN pass = 1 THEN least(shares[i], remaining) ELSE remaining END;
            cap := grp.cap;
            used := 0;
            IF grp.tenant_id IS NOT NULL AND cap IS NOT NULL THEN
                -- Another claimer holds this pair right now: leave it to them, wait for no one.
                SELECT s.running INTO used FROM tenant_slots s
                WHERE s.tenant_id = grp.tenant_id AND s.stage = grp.type
                FOR UPDATE SKIP LOCKED;
                IF NOT FOUND THEN
                    -- Locked by another claimer, or (jobs older than this table) missing.
                    IF NOT EXISTS (SELECT 1 FROM tenant_slots s
                                   WHERE s.tenant_id = grp.tenant_id AND s.stage = grp.type) THEN
                        INSERT INTO tenant_slots (tenant_id, stage)
                        VALUES (grp.tenant_id, grp.type) ON CONFLICT DO NOTHING;
                    END IF;
                    finished[i] := true;
                    CONTINUE;
                END IF;
                take := least(take, cap - used);
            END IF;
            got := 0;
            IF take > 0 THEN
                -- Two spellings of one claim, so that each can use jobs_ready: "tenant_id IS
                -- NOT DISTINCT FROM" could not.
                IF grp.tenant_id IS NULL THEN
                    RETURN QUERY
                    WITH picked AS (
                        SELECT j.id FROM jobs j
                        WHERE j.status = 'queued' AND j.type = grp.type AND j.tenant_id IS NULL
                          AND j.run_after <= now()
                        ORDER BY j.priority DESC, j.run_after, j.id
                        LIMIT take
                        FOR UPDATE SKIP LOCKED
                    )
                    UPDATE jobs AS j
                    SET status = 'running', attempts = j.attempts + 1, claims = j.claims + 1,
                        leased_until = now() + make_interval(secs => j.lease_seconds),
                        worker_id = p_worker, started_at = now(), holds_slot = false
                    WHERE j.id = ANY (ARRAY(SELECT picked.id FROM picked))
                    RETURNING j.*;
                ELSE
                    RETURN QUERY
                    WITH picked AS (
                        SELECT j.id FROM jobs j
                        WHERE j.status = 'queued' AND j.type = grp.type
                          AND j.tenant_id = grp.tenant_id AND j.run_after <= now()
                        ORDER BY j.priority DESC, j.run_after, j.id
                        LIMIT take
                        FOR UPDATE SKIP LOCKED
                    )
                    UPDATE jobs AS j
                    SET status = 'running', attempts = j.attempts + 1, claims = j.claims + 1,
                        leased_until = now() + make_interval(secs => j.lease_seconds),
                        worker_id = p_worker, started_at = now(), holds_slot = cap IS NOT NULL
                    WHERE j.id = ANY (ARRAY(SELECT picked.id FROM picked))
                    RETURNING j.*;
                END IF;
                GET DIAGNOSTICS got = ROW_COUNT;
            END IF;
            -- Only when something was claimed: a new row version of the counter would make the
            -- enqueue of that tenant's next job wait for this claim to commit.
            IF grp.tenant_id IS NOT NULL AND got > 0 AND cap IS NOT NULL THEN
                UPDATE tenant_slots  -- its lock is ours since the SELECT ... FOR UPDATE above
                SET running = running + got, served_at = clock_timestamp()
                WHERE tenant_id = grp.tenant_id AND stage = grp.type;
            ELSIF grp.tenant_id IS NOT NULL AND got > 0 THEN
                UPDATE tenant_slots AS s SET served_at = clock_timestamp()
                FROM (SELECT s2.ctid AS row_id FROM tenant_slots s2
                      WHERE s2.tenant_id = grp.tenant_id AND s2.stage = grp.type
                      FOR UPDATE SKIP LOCKED) AS l
                WHERE s.ctid = l.row_id;
            END IF;
            remaining := remaining - got;
            IF got < take OR take <= 0 THEN
                finished[i] := true;  -- ran dry or reached its cap: nothing more this claim
            END IF;
        END LOOP;
        EXIT WHEN remaining <= 0;
    END LOOP;
END
$$;

-- Recounts each pair from the jobs table under its row lock; returns the pairs it corrected.
CREATE FUNCTION pipeline_repair_slots()
RETURNS TABLE (tenant_id text, stage text, was integer, counted integer)
LANGUAGE plpgsql AS $$
DECLARE
    pair record;
BEGIN
    FOR pair IN SELECT s.tenant_id, s.stage FROM tenant_slots s LOOP
        SELECT s.running INTO was FROM tenant_slots s
        WHERE s.tenant_id = pair.tenant_id AND s.stage = pair.stage
        FOR UPDATE;
        -- A statement of its own, so its snapshot is taken after the lock: claims that
        -- committed while we waited are counted.
        SELECT count(*) INTO counted FROM jobs j
        WHERE j.status = 'running' AND j.holds_slot
          AND j.tenant_id = pair.tenant_id AND j.type = pair.stage;
        IF was IS DISTINCT FROM counted THEN
            UPDATE tenant_slots s SET running = counted
            WHERE s.tenant_id = pair.tenant_id AND s.stage = pair.stage;
            tenant_id := pair.tenant_id;
            stage := pair.stage;
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;
