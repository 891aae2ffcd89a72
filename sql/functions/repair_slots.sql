-- One batch of the slot repair: up to p_limit counter rows after (p_after_tenant, p_after_stage)
-- in key order, each recounted from the jobs table under its row lock, and removed once idle.
-- Returns every pair it locked, in key order (the last one is the next batch's start): `was`
-- the count before (the counter less the slots given back that no claim had subtracted yet,
-- pipeline.freed_slots, whose rows of the batch's pairs go), `counted` the jobs holding a slot
-- now, `removed` when the row went.
--
-- A batch is one transaction, a few milliseconds long, so the repair never holds more than
-- p_limit counters at once: a claim finds a pair locked by it (and leaves it for the next claim)
-- for no longer than one batch, and a completion waits no longer than that to free its slot.
-- A pair locked right now (a claim or a completion is changing it) is skipped, left for the
-- next pass: waiting for it while holding the pairs already locked could deadlock with a
-- completion that frees slots of several tenants in another order.
--
-- Idle: no job of the pair holds a slot or waits in the queue. Its row goes, so the table
-- holds the pairs with work, not every pair ever seen; the next job enqueued for the pair
-- makes it again (pipeline.add_slots). A job enqueued while the batch runs, not committed yet,
-- is not seen here: its pair may lose its row under it. The claim makes a capped pair's missing
-- row and gives it no room until the next claim; an uncapped pair only loses its place in the
-- least-recently-served order until its next enqueue.
CREATE OR REPLACE FUNCTION pipeline.repair_slots(
    p_after_tenant text, p_after_stage text, p_limit integer
) RETURNS TABLE (tenant_id text, stage text, was integer, counted integer, removed boolean)
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tenants text[];
    stages text[];
    counters integer[];
BEGIN
    SELECT array_agg(l.tenant_id ORDER BY l.tenant_id, l.stage),
           array_agg(l.stage ORDER BY l.tenant_id, l.stage),
           array_agg(l.running ORDER BY l.tenant_id, l.stage)
    INTO tenants, stages, counters
    FROM (
        SELECT s.tenant_id, s.stage, s.running FROM pipeline.tenant_slots s
        WHERE (s.tenant_id, s.stage) > (p_after_tenant, p_after_stage)
        ORDER BY s.tenant_id, s.stage
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ) AS l;
    IF tenants IS NULL THEN
        RETURN;
    END IF;
    -- A statement of its own, so its snapshot is taken after the locks: claims and completions
    -- that committed before them are counted, and none of the locked pairs changes meanwhile.
    RETURN QUERY
    WITH locked AS (
        SELECT * FROM unnest(tenants, stages, counters) AS l(tenant_id, stage, counter)
    ),
    -- In the same snapshot as the recount: a slot given back there is in it, and its job no
    -- longer holds one; one given back by a transaction that commits later is in neither, and
    -- stays for the next claim to subtract.
    freed AS (
        DELETE FROM pipeline.freed_slots AS f
        USING locked l
        WHERE f.tenant_id = l.tenant_id AND f.stage = l.stage
        RETURNING f.tenant_id, f.stage, f.n
    ),
    freed_by_pair AS (
        SELECT f.tenant_id, f.stage, sum(f.n)::integer AS n FROM freed f GROUP BY 1, 2
    ),
    -- One pass over the running jobs (jobs_running) for the whole batch, not one a pair, and
    -- never through jobs_tenant, which would read every finished job of a tenant.
    holding AS MATERIALIZED (
        SELECT j.tenant_id, j.type AS stage, count(*)::integer AS n
        FROM pipeline.active_jobs j
        WHERE j.status = 'running' AND j.holds_slot
        GROUP BY 1, 2
    ),
    recounted AS (
        SELECT l.tenant_id, l.stage, l.counter,
               greatest(l.counter - coalesce(fr.n, 0), 0) AS was, coalesce(h.n, 0) AS counted,
               -- Idle: nothing holds a slot and nothing waits (jobs_ready, one probe a pair).
               coalesce(h.n, 0) = 0 AND NOT EXISTS (
                   SELECT 1 FROM pipeline.active_jobs j
                   WHERE j.status = 'queued' AND j.type = l.stage AND j.tenant_id = l.tenant_id
               ) AS idle
        FROM locked l
        LEFT JOIN holding h ON h.tenant_id = l.tenant_id AND h.stage = l.stage
        LEFT JOIN freed_by_pair fr ON fr.tenant_id = l.tenant_id AND fr.stage = l.stage
    ),
    gone AS (
        DELETE FROM pipeline.tenant_slots AS s
        USING recounted r
        WHERE r.idle AND s.tenant_id = r.tenant_id AND s.stage = r.stage
    ),
    -- Its pass goes with it (a pair back at work starts at its stage's virtual time anyway),
    -- unless a claim holds the row: never waited for, which a claim waiting for the row in key
    -- order could make a circle of (sql/functions/take_passes.sql).
    gone_passes AS (
        DELETE FROM pipeline.tenant_passes AS p
        USING (SELECT l.tenant_id, l.stage FROM pipeline.tenant_passes l
               JOIN recounted r ON r.idle AND r.tenant_id = l.tenant_id AND r.stage = l.stage
               FOR UPDATE OF l SKIP LOCKED) AS l
        WHERE p.tenant_id = l.tenant_id AND p.stage = l.stage
    ),
    fixed AS (
        UPDATE pipeline.tenant_slots AS s SET running = r.counted
        FROM recounted r
        WHERE NOT r.idle AND r.counter <> r.counted
          AND s.tenant_id = r.tenant_id AND s.stage = r.stage
    )
    SELECT r.tenant_id, r.stage, r.was, r.counted, r.idle FROM recounted r
    ORDER BY r.tenant_id, r.stage;
END
$$;
