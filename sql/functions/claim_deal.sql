-- The claim's dealing (pipeline.claim, which calls it in its turn): up to p_limit ready jobs of
-- p_types for worker p_worker, fairly across tenants and within each (tenant, stage) pair's cap
-- (p_caps: the worker's default caps by p_cap_stages). Concurrent claimers take disjoint jobs.
--
-- This function deals the batch out; its parts, one file each, do the rest:
--   pipeline.claim_groups  which groups of ready work, in what order (group selection; not
--                          needed for stages without a tenant's job queued: below);
--   pipeline.lock_slots    how many a capped group may take, under its counter's lock, taken
--                          from its counter at once (with give_back_slots: cap accounting);
--   pipeline.claim_pick    which jobs of each group (picking);
--   pipeline.claim_take    the picked jobs marked running (taking);
--   pipeline.give_back_slots  what a capped group did not take of its room, back on its counter;
--   pipeline.admit_picks   which picked jobs a rate limit leaves queued, and what their groups
--                          take instead (only when a picked job carries charges: the plain
--                          claim skips it).
--   pipeline.take_passes   the passes advanced by what was taken (fair-share accounting).
-- Each group of the best priority gets a share of the batch in proportion to its weight on a
-- first pass, all of them in one go; what is left goes to the groups one at a time, in their
-- order (lower priorities last), on a second. A capped group never takes more than its free
-- slots.
CREATE OR REPLACE FUNCTION pipeline.claim_deal(
    p_types text[], p_limit integer, p_worker uuid, p_cap_stages text[], p_caps integer[]
) RETURNS SETOF pipeline.claimed_job
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
-- Planned once per connection (0008): planning each call cost more than the claim itself. The
-- settings hold for the parts it calls as well.
SET plan_cache_mode = force_generic_plan
-- And by index, whatever the statistics say when the plan is made. A queue drained and then
-- vacuumed has no pages and reltuples 0, so every scan of it costs nothing; an idle worker's
-- claim is planned again then (the vacuum's update of pg_class invalidates its plans), and the
-- generic plan it keeps probed each tenant's head, and the untenanted head, by a sequential scan
-- and sort of the whole queue: 50-140 ms a claim once 30,000 jobs arrived, against 4-12, until
-- the next ANALYZE (docs/measurements.md, 2026-12-03 (ad)). The claim's small tables
-- (tenant_passes, tenant_caps, budgets) are read by their keys instead.
SET enable_seqscan = off
AS $$
DECLARE
    groups pipeline.claim_group[];
    weights double precision[];  -- each group's weight
    floors double precision[];  -- each group's stage's least pass in the order
    total_weight double precision;  -- of the groups of the best priority
    top smallint;  -- the best priority of the groups
    n integer;
    shares integer[];  -- each group's first-pass share
    budget integer;
    sharing integer := 0;  -- groups 1..sharing have a first-pass share
    quota integer;
    remaining integer := p_limit;
    grp pipeline.claim_group;
    batch pipeline.claim_group[];  -- the groups of this step, and what each is offered
    takes integer[];
    tenanted boolean := false;  -- a group of the batch belongs to a tenant
    capped boolean := false;  -- a group of the batch has a cap
    rooms integer[];  -- what each group of the batch may take
    reserved integer;  -- of which the capped groups' rooms, taken from their counters
    ids bigint[];  -- the jobs picked, and of them those that hold a slot
    capped_ids bigint[];
    all_capped boolean;  -- every job picked holds a slot (capped_ids is ids)
    picked_from integer[];  -- for each job picked, its group's position in the batch
    first_picked_from integer[] := '{}';
    limited_ids bigint[];  -- the picked jobs that carry rate-limit charges, and theirs
    charges jsonb[];
    served integer[] := '{}';  -- for each tenant's job claimed, its group's position in groups
    got integer;
BEGIN
    -- Stages none of whose queued jobs has a tenant: their jobs are one group a stage, without
    -- a cap, a pass or a budget, which need no selection (pipeline.claim_groups: a tenth of the
    -- plain claim's CPU), only their heads, in claim_groups' order. The untenanted heads are
    -- looked for first: stages of tenants alone then cost a probe a stage that finds nothing,
    -- not a second walk over their taken jobs' index entries. Each probe is a LIMIT 1 of its
    -- own: a generic plan cannot make a join of them that reads a whole index.
    SELECT array_agg(ROW(t.type, NULL, NULL, h.priority, h.run_after, h.id)::pipeline.claim_group
                     ORDER BY h.priority DESC, h.run_after)
    INTO groups
    FROM unnest(p_types) AS t(type)
    CROSS JOIN LATERAL (
        SELECT j.priority, j.run_after, j.id FROM pipeline.active_jobs j
        WHERE j.status = 'queued' AND j.type = t.type AND j.tenant_id IS NULL
          AND j.run_after <= now()
        ORDER BY j.priority DESC, j.run_after, j.id
        LIMIT 1
    ) AS h;
    IF groups IS NOT NULL AND NOT EXISTS (
        SELECT FROM unnest(p_types) AS t(type)
        CROSS JOIN LATERAL (
            SELECT FROM pipeline.active_jobs j
            WHERE j.status = 'queued' AND j.type = t.type AND j.tenant_id IS NOT NULL
            -- jobs_ready's order: without it, the planner may walk the table for a stage with
            -- nothing queued, which reads every row.
            ORDER BY j.tenant_id, j.priority DESC, j.run_after, j.id
            LIMIT 1
        ) AS tenanted
    ) THEN
        weights := array_fill(1::double precision, ARRAY[cardinality(groups)]);
        floors := array_fill(NULL::double precision, ARRAY[cardinality(groups)]);
    ELSE
        groups := NULL;
    END IF;
    IF groups IS NULL THEN
        -- In the order of pipeline.claim_groups' ORDER BY, which the aggregates read it in.
        SELECT array_agg(g.grp), array_agg(g.weight), array_agg(g.floor)
        INTO groups, weights, floors
        FROM pipeline.claim_groups(p_types, p_cap_stages, p_caps) AS g;
    END IF;
    n := coalesce(array_length(groups, 1), 0);
    IF n = 0 THEN
        RETURN;
    END IF;
    -- First-pass shares go to the groups of the best priority alone: shared with every group, a
    -- batch took lower-priority jobs while higher ones stayed queued (one urgent job of ten
    -- with nine tenants below it). The lower groups get what those leave, on the second pass.
    top := (groups[1]).head_priority;
    total_weight := 0;
    FOR i IN 1..n LOOP
        EXIT WHEN (groups[i]).head_priority <> top;
        total_weight := total_weight + weights[i];
    END LOOP;
    -- First-pass shares in the fair order, each in proportion to the group's weight, until the
    -- batch is spent. Groups of weight 1 alone share it evenly.
    shares := array_fill(0, ARRAY[n]);
    budget := p_limit;
    FOR i IN 1..n LOOP
        EXIT WHEN (groups[i]).head_priority <> top;
        quota := greatest(1, ceil(p_limit * weights[i] / total_weight)::integer);
        shares[i] := least(quota, budget);
        EXIT WHEN shares[i] = 0;
        budget := budget - shares[i];
        sharing := i;
        grp := groups[i];
        tenanted := tenanted OR grp.tenant_id IS NOT NULL;
        capped := capped OR grp.cap IS NOT NULL;
    END LOOP;

    -- Step 0 is the first pass, every group at once; step i offers group i what is left.
    FOR step IN 0..n LOOP
        EXIT WHEN remaining <= 0;
        IF step = 0 THEN
            -- Only the groups with a share: with many tenants, most of them wait for a later
            -- claim, and each part would otherwise go through all of them.
            batch := groups[1:sharing];
            takes := shares[1:sharing];
        ELSE
            -- A group that took less than its share on the first pass has no more to give now:
            -- it ran dry or reached its cap.
            CONTINUE WHEN cardinality(array_positions(first_picked_from, step)) < shares[step];
            grp := groups[step];
            batch := ARRAY[grp];
            takes := ARRAY[remaining];
            tenanted := grp.tenant_id IS NOT NULL;
            capped := grp.cap IS NOT NULL;
        END IF;
        rooms := takes;
        IF capped THEN
            -- The first pass waits for counters another claim holds, in key order; the
            -- later ones, a group at a time in the fair order, skip them (lock_slots says why).
            rooms := pipeline.lock_slots(batch, takes, step = 0);
            SELECT coalesce(sum(r.room), 0) INTO reserved
            FROM unnest(batch, rooms) AS r(type, tenant_id, cap, head_priority, head_run_after,
                                           head_id, room)
            WHERE r.cap IS NOT NULL;
        END IF;
        SELECT array_agg(p.id),
               coalesce(array_agg(p.id) FILTER (WHERE (batch[p.group_at]).cap IS NOT NULL), '{}'),
               array_agg(p.group_at),
               array_agg(p.id) FILTER (WHERE p.limits IS NOT NULL),
               array_agg(p.limits) FILTER (WHERE p.limits IS NOT NULL)
        INTO ids, capped_ids, picked_from, limited_ids, charges
        FROM pipeline.claim_pick(batch, rooms) AS p;
        IF limited_ids IS NOT NULL THEN
            -- Rate limits, before the claim: a refused job stays queued, without an attempt,
            -- a slot or a mark of service (docs/limits.md).
            SELECT * INTO ids, picked_from, capped_ids
            FROM pipeline.admit_picks(
                batch, ids, picked_from, capped_ids, limited_ids, charges, step = 0
            );
        END IF;
        IF step = 0 THEN
            first_picked_from := coalesce(picked_from, '{}');
        END IF;
        -- Each capped group took at most its room: fewer jobs than their rooms' sum means one
        -- took less, which its counter gets back.
        IF capped AND cardinality(capped_ids) < reserved THEN
            PERFORM pipeline.give_back_slots(batch, rooms, picked_from);
        END IF;
        CONTINUE WHEN ids IS NULL;
        -- capped_ids is a subset of ids: the same size, it is all of them. Then no job looks
        -- itself up in it, a linear search of the array per row: 17,000 comparisons in a claim
        -- of 184 capped jobs, 50-90 us.
        all_capped := cardinality(capped_ids) = cardinality(ids);
        RETURN QUERY SELECT * FROM pipeline.claim_take(ids, capped_ids, all_capped, p_worker);
        GET DIAGNOSTICS got = ROW_COUNT;
        remaining := remaining - got;
        IF tenanted THEN
            served := served || CASE WHEN step = 0 THEN picked_from
                                     ELSE array_fill(step, ARRAY[got]) END;
        END IF;
    END LOOP;
    -- Last: it waits for other claims' passes (pipeline.take_passes says why it cannot deadlock).
    IF cardinality(served) > 0 THEN
        PERFORM pipeline.take_passes(groups, weights, floors, served);
    END IF;
END
$$;
