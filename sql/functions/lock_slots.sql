-- The claim's cap accounting, before it picks: how many jobs each group may take now, its room.
-- A group without a cap may take what it is offered; a capped (tenant, stage) pair at most its
-- free slots, counted under its counter row's lock, which the claim then holds to its commit.
--
-- Why a counter row per pair, locked by the claim: a count of running rows taken inside a claim
-- cannot see other claimers' uncommitted claims, so two claimers at once would both see room
-- and overshoot. The count read under the lock includes every committed claim.
--
-- A counter another claim holds: that claim has dealt and is committing (claims deal one at a
-- time, sql/functions/claim_turn.sql, and give the turn back before they commit; a worker's
-- claim is one statement in autocommit, so its locks go with that commit, with no round trip
-- to a client that could stall between). So the claim's first pass (p_wait) waits for it, in
-- key order, and then counts what it committed. Skipped (SKIP LOCKED, as before 0038), every
-- pair the claim before had served came back with no room: with ten capped tenants a second
-- worker's claims found nothing while the first worker's committed, and that worker napped
-- until its poll (docs/measurements.md, 2026-12-04 (au)).
--
-- No circle of waits: a claim waits for a counter only in its first pass, in key order,
-- holding counters of lower keys and no pass; the holder it waits for is either in its own
-- first pass, waiting for a greater key, or past it, where it waits for nothing but passes
-- (pipeline.take_passes, in key order), which no claim holds before its counters. So the
-- chain only climbs, with turns shared or off too. The later passes, which offer one group at
-- a time whatever its key, skip a locked counter (the group gets nothing this time), and so
-- does the slot repair (pipeline.repair_slots). An operator's UPDATE that moves running jobs
-- between tenants (pipeline.move_slot) takes counters in its rows' order and may meet a
-- waiting claim the other way round: PostgreSQL's deadlock detector then ends one, and a
-- worker retries its claim as after any outage.
--
-- The room is taken here, in the counter's one update: the count is raised by it at once, and
-- the claim gives back what it did not take (pipeline.give_back_slots), which in a claim that
-- finds the jobs it looked for is nothing. Raised after the pick by what was taken, each
-- counter was updated twice a claim (docs/measurements.md, 2026-12-03 (t)). Nobody else sees
-- the count before the claim commits.
--
-- Slots given back (pipeline.freed_slots: a job left running) are subtracted here, under the
-- same lock, and their rows deleted: a completion only inserts, so it never waits for a claim
-- holding the counter, and a claim never finds a counter locked by a completion. One given back
-- by a transaction not committed yet is not seen, and waits for the next claim: a count can
-- only be too high for a moment, never too low, so no cap is ever passed.
CREATE OR REPLACE FUNCTION pipeline.lock_slots(
    p_groups pipeline.claim_group[], p_takes integer[], p_wait boolean
) RETURNS integer[]
LANGUAGE sql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
WITH offered AS (
    SELECT * FROM unnest(p_groups, p_takes) WITH ORDINALITY
        AS g(type, tenant_id, cap, head_priority, head_run_after, head_id, take, i)
),
-- One arm each way, the other cut before it reads anything by its one-time filter on p_wait: a
-- locking clause cannot be chosen by a parameter.
waited AS MATERIALIZED (
    SELECT o.i, o.tenant_id, o.type, o.take, o.cap, s.running
    FROM offered o
    JOIN pipeline.tenant_slots s ON s.tenant_id = o.tenant_id AND s.stage = o.type
    WHERE p_wait AND o.cap IS NOT NULL AND o.take > 0
    ORDER BY s.tenant_id, s.stage
    FOR UPDATE OF s
),
skipped AS MATERIALIZED (
    SELECT o.i, o.tenant_id, o.type, o.take, o.cap, s.running
    FROM offered o
    JOIN pipeline.tenant_slots s ON s.tenant_id = o.tenant_id AND s.stage = o.type
    WHERE NOT p_wait AND o.cap IS NOT NULL AND o.take > 0
    FOR UPDATE OF s SKIP LOCKED
),
locked AS MATERIALIZED (
    SELECT * FROM waited UNION ALL SELECT * FROM skipped
),
-- Only the locked pairs' rows: no one else deletes them, since only the holder of a pair's
-- counter lock (this claim, or the slot repair) does.
freed AS (
    DELETE FROM pipeline.freed_slots AS f
    USING locked l
    WHERE f.tenant_id = l.tenant_id AND f.stage = l.type
    RETURNING f.tenant_id, f.stage, f.n
),
freed_by_pair AS MATERIALIZED (
    SELECT f.tenant_id, f.stage, sum(f.n)::integer AS n FROM freed f GROUP BY 1, 2
),
rooms AS MATERIALIZED (
    SELECT l.i, l.tenant_id, l.type, coalesce(f.n, 0) AS freed,
           greatest(0, least(l.take, l.cap - greatest(l.running - coalesce(f.n, 0), 0))) AS room
    FROM locked l
    LEFT JOIN freed_by_pair f ON f.tenant_id = l.tenant_id AND f.stage = l.type
),
-- Never below zero: a drift is the repair's to report, never a reason to refuse a claim.
taken AS (
    UPDATE pipeline.tenant_slots AS s SET running = greatest(s.running - r.freed, 0) + r.room
    FROM rooms r
    WHERE s.tenant_id = r.tenant_id AND s.stage = r.type AND (r.room > 0 OR r.freed > 0)
),
-- A capped pair without a counter row (its jobs are older than the row, or someone deleted it)
-- gets one now, and no room this time. In one order, so that two claimers making rows for the
-- same pairs take turns instead of each waiting for the other.
made AS (
    INSERT INTO pipeline.tenant_slots (tenant_id, stage)
    SELECT o.tenant_id, o.type FROM offered o
    WHERE o.cap IS NOT NULL AND o.take > 0
      -- Looked for only when a capped group went without its lock: the common claim, which
      -- locked every one, reads no more.
      AND (SELECT count(*) FROM locked) < (SELECT count(*) FROM offered o2
                                           WHERE o2.cap IS NOT NULL AND o2.take > 0)
      AND NOT EXISTS (SELECT 1 FROM pipeline.tenant_slots s
                      WHERE s.tenant_id = o.tenant_id AND s.stage = o.type)
    ORDER BY o.tenant_id, o.type
    ON CONFLICT DO NOTHING
)
SELECT ARRAY(
    SELECT CASE WHEN o.cap IS NULL THEN o.take ELSE coalesce(r.room, 0) END
    FROM offered o LEFT JOIN rooms r ON r.i = o.i
    ORDER BY o.i
)
$$;
