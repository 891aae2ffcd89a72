-- The claim: up to p_limit ready jobs of p_types for worker p_worker, fairly across tenants and
-- within each (tenant, stage) pair's cap (p_caps: the worker's default caps by p_cap_stages).
-- Concurrent claimers take disjoint jobs without waiting for each other. Groups of ready work are
-- (stage, tenant) pairs, ordered by their best priority, then least recently served first:
-- round-robin across tenants within a priority level, FIFO within a tenant. Each group gets a
-- fair share of the batch on a first pass and what is left on a second; a capped group never
-- more than its free slots.
CREATE OR REPLACE FUNCTION pipeline_claim(
    p_types text[], p_limit integer, p_worker uuid, p_cap_stages text[], p_caps integer[]
) RETURNS SETOF jobs
LANGUAGE plpgsql
-- Planned once per connection (0008): planning each call cost more than the claim itself.
SET plan_cache_mode = force_generic_plan
AS $$
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
    tenants_share boolean := false;  -- a tenant group has a first-pass share
BEGIN
    -- Distinct tenants with queued jobs per stage, found by skipping through jobs_ready one
    -- tenant at a time; then each one's best ready job, for the order. The skips order by
    -- jobs_ready's own order, which an index on tenant_id alone (jobs_tenant) could not give:
    -- it would tempt the planner into walking every row of a stage with none queued.
    -- Each group keeps its head's keys: the picks below start their index scans there, at the
    -- head's priority, then go on to lower ones. The entries before a head are of jobs taken
    -- since the last vacuum: one probe a group steps over them (the skip, whose first row is
    -- the tenant's head unless that row waits for a later run_after), and no pick does (0009).
    groups := ARRAY(
        SELECT ROW(g.type, g.tenant_id, g.cap, g.priority, g.run_after, g.head_id)
               ::pipeline_claim_group
        FROM (
            WITH RECURSIVE tenants(type, tenant_id, priority, run_after, id) AS (
                SELECT t.type, f.tenant_id, f.priority, f.run_after, f.id
                FROM unnest(p_types) AS t(type)
                CROSS JOIN LATERAL (
                    SELECT j.tenant_id, j.priority, j.run_after, j.id FROM jobs j
                    WHERE j.status = 'queued' AND j.type = t.type AND j.tenant_id IS NOT NULL
                    ORDER BY j.tenant_id, j.priority DESC, j.run_after, j.id
                    LIMIT 1
                ) AS f
                UNION ALL
                SELECT tn.type, f.tenant_id, f.priority, f.run_after, f.id
                FROM tenants tn
                CROSS JOIN LATERAL (
                    SELECT j.tenant_id, j.priority, j.run_after, j.id FROM jobs j
                    WHERE j.status = 'queued' AND j.type = tn.type
                      AND j.tenant_id > tn.tenant_id
                    ORDER BY j.tenant_id, j.priority DESC, j.run_after, j.id
                    LIMIT 1
                ) AS f
            )
            SELECT tn.type, tn.tenant_id, head.priority, head.run_after, head.id AS head_id,
                   s.served_at,
                   coalesce(c.cap, p_caps[array_position(p_cap_stages, tn.type)]) AS cap,
                   coalesce(s.running, 0) AS running
            FROM tenants tn
            CROSS JOIN LATERAL (
                SELECT tn.priority, tn.run_after, tn.id WHERE tn.run_after <= now()
                UNION ALL
                -- Its first job waits for later: its best ready one, if any, is further on.
                (SELECT j.priority, j.run_after, j.id FROM jobs j
                 WHERE tn.run_after > now() AND j.status = 'queued' AND j.type = tn.type
                   AND j.tenant_id = tn.tenant_id AND j.run_after <= now()
                 ORDER BY j.priority DESC, j.run_after, j.id
                 LIMIT 1)
            ) AS head
            LEFT JOIN tenant_slots s ON s.tenant_id = tn.tenant_id AND s.stage = tn.type
            LEFT JOIN tenant_caps c ON c.tenant_id = tn.tenant_id AND c.stage = tn.type
            UNION ALL
            SELECT t.type, NULL, head.priority, head.run_after, head.id, NULL, NULL, 0
            FROM unnest(p_types) AS t(type)
            CROSS JOIN LATERAL (
                SELECT j.priority, j.run_after, j.id FROM jobs j
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
        tenants_share := tenants_share OR (shares[i] > 0 AND grp.tenant_id IS NOT NULL);
    END LOOP;

    -- Tenants take their first-pass shares in one statement, however many have work. A
    -- capped pair's counter row is locked SKIP LOCKED (a pair another claimer holds is left to
    -- them), its count read under that lock (FOR UPDATE reads the latest committed version),
    -- at most its free slots taken, and the count raised by what was taken, all before this
    -- transaction commits. A capped pair whose counter row is missing gets nothing here; the
    -- second pass below makes its row.
    IF tenants_share THEN
        RETURN QUERY
        WITH wanted AS (
            SELECT * FROM unnest(groups, shares)
                AS w(type, tenant_id, cap, head_priority, head_run_after, head_id, take)
            WHERE w.take > 0 AND w.tenant_id IS NOT NULL
        ),
        locked AS (
            SELECT w.type, w.tenant_id, greatest(0, least(w.take, w.cap - s.running)) AS room,
                   w.head_priority, w.head_run_after, w.head_id
            FROM wanted w
            JOIN tenant_slots s ON s.tenant_id = w.tenant_id AND s.stage = w.type
            WHERE w.cap IS NOT NULL
            FOR UPDATE OF s SKIP LOCKED
        ),
        rooms AS (
            SELECT l.type, l.tenant_id, l.room, true AS capped,
                   l.head_priority, l.head_run_after, l.head_id
            FROM locked l
            UNION ALL
            SELECT w.type, w.tenant_id, w.take, false, w.head_priority, w.head_run_after, w.head_id
            FROM wanted w WHERE w.cap IS NULL
        ),
        picked AS (
            SELECT p.id, r.capped
            FROM rooms r
            CROSS JOIN LATERAL (
                SELECT same.id FROM (
                    SELECT j.id FROM jobs j
                    WHERE j.status = 'queued' AND j.type = r.type AND j.tenant_id = r.tenant_id
                      AND j.priority = r.head_priority
                      AND (j.run_after, j.id) >= (r.head_run_after, r.head_id)
                      AND j.run_after <= now()
                    ORDER BY j.run_after, j.id
                    LIMIT r.room
                    FOR UPDATE SKIP LOCKED
                ) AS same
                UNION ALL
                SELECT below.id FROM (
                    SELECT j.id FROM jobs j
                    WHERE j.status = 'queued' AND j.type = r.type AND j.tenant_id = r.tenant_id
                      AND j.priority < r.head_priority AND j.run_after <= now()
                    ORDER BY j.priority DESC, j.run_after, j.id
                    LIMIT r.room
                    FOR UPDATE SKIP LOCKED
                ) AS below
                LIMIT r.room
            ) AS p
        ),
        claimed AS (
            UPDATE jobs AS j
            SET status = 'running', attempts = j.attempts + 1, claims = j.claims + 1,
                leased_until = now() + make_interval(secs => j.lease_seconds),
                worker_id = p_worker, started_at = now(),
                holds_slot = j.id = ANY (ARRAY(SELECT picked.id FROM picked WHERE picked.capped))
            -- By primary key, whatever the planner guesses of the batch's size: a generic plan
            -- of a join here would hash the whole table.
            WHERE j.id = ANY (ARRAY(SELECT picked.id FROM picked))
            RETURNING j.*
        ),
        counted AS (
            UPDATE tenant_slots AS s
            SET running = s.running + c.taken, served_at = clock_timestamp()
            FROM (SELECT claimed.type, claimed.tenant_id, count(*)::integer AS taken
                  FROM claimed WHERE claimed.holds_slot GROUP BY 1, 2) AS c
            WHERE s.tenant_id = c.tenant_id AND s.stage = c.type
        ),
        -- An uncapped pair's row is bumped only where no one else holds it: waiting here, in
        -- whatever order the rows come, could deadlock two claimers; a missed bump costs a
        -- little fairness.
        served AS (
            UPDATE tenant_slots AS s SET served_at = clock_timestamp()
            FROM (
                SELECT s2.tenant_id, s2.stage FROM tenant_slots s2
                WHERE (s2.stage, s2.tenant_id) IN (SELECT c.type, c.tenant_id FROM claimed c
                                                   WHERE NOT c.holds_slot)
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
            IF pass = 1 AND (shares[i] = 0 OR grp.tenant_id IS NOT NULL) THEN
                CONTINUE;  -- no share, or taken by a statement above
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
                        SELECT same.id FROM (
                            SELECT j.id FROM jobs j
                            WHERE j.status = 'queued' AND j.type = grp.type
                              AND j.tenant_id IS NULL AND j.priority = grp.head_priority
                              AND (j.run_after, j.id) >= (grp.head_run_after, grp.head_id)
                              AND j.run_after <= now()
                            ORDER BY j.run_after, j.id
                            LIMIT take
                            FOR UPDATE SKIP LOCKED
                        ) AS same
                        UNION ALL
                        SELECT below.id FROM (
                            SELECT j.id FROM jobs j
                            WHERE j.status = 'queued' AND j.type = grp.type
                              AND j.tenant_id IS NULL AND j.priority < grp.head_priority
                              AND j.run_after <= now()
                            ORDER BY j.priority DESC, j.run_after, j.id
                            LIMIT take
                            FOR UPDATE SKIP LOCKED
                        ) AS below
                        LIMIT take
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
                        SELECT same.id FROM (
                            SELECT j.id FROM jobs j
                            WHERE j.status = 'queued' AND j.type = grp.type
                              AND j.tenant_id = grp.tenant_id AND j.priority = grp.head_priority
                              AND (j.run_after, j.id) >= (grp.head_run_after, grp.head_id)
                              AND j.run_after <= now()
                            ORDER BY j.run_after, j.id
                            LIMIT take
                            FOR UPDATE SKIP LOCKED
                        ) AS same
                        UNION ALL
                        SELECT below.id FROM (
                            SELECT j.id FROM jobs j
                            WHERE j.status = 'queued' AND j.type = grp.type
                              AND j.tenant_id = grp.tenant_id AND j.priority < grp.head_priority
                              AND j.run_after <= now()
                            ORDER BY j.priority DESC, j.run_after, j.id
                            LIMIT take
                            FOR UPDATE SKIP LOCKED
                        ) AS below
                        LIMIT take
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
