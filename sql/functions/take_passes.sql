-- The claim's fair-share accounting, its last statement: each (tenant, stage) pair it took jobs
-- from has its pass advanced by n / weight for the n jobs it took, from no lower than the floor
-- its stage had in the claim's order (p_floors, by group; a pair that (re)joined starts there),
-- and the floor kept for the order of later claims (pipeline.claim_groups). p_served holds, for
-- each job taken, its group's position in p_groups; p_weights each group's weight as the claim
-- read it, which a pair's new row takes (a row's own is the one that counts).
--
-- Exact, and no deadlock. Every increment is made under the row's lock, on the row's latest
-- version (ON CONFLICT DO UPDATE), so none is lost to a concurrent claim of the same pair, as a
-- mark skipped when its row was locked would be. Claims wait for each other's passes here only,
-- in one statement that takes the rows in key order (tenant, stage), inserting or updating
-- each, and holds them to its commit with no wait after. A claim waiting for a row is waiting
-- for a holder that is either past this statement (committing, waiting for no one) or in it,
-- waiting for a row of a greater key: a chain of waits only climbs the keys, so it never closes
-- into a circle. A claim holds no pass while it waits for a counter (pipeline.lock_slots' first
-- pass, before this statement), and no one else waits on a pass's row while holding another
-- lock: `pipeline tenants set-weight` writes a tenant's rows in the same key order in a
-- transaction of its own, and the slot repair skips the rows it finds locked.
CREATE OR REPLACE FUNCTION pipeline.take_passes(
    p_groups pipeline.claim_group[], p_weights double precision[], p_floors double precision[],
    p_served integer[]
) RETURNS void
LANGUAGE sql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
INSERT INTO pipeline.tenant_passes AS p (tenant_id, stage, pass, floor, weight, taken)
SELECT g.tenant_id, g.type, g.floor + t.n / g.weight, g.floor, g.weight, t.n
-- The jobs are counted by their group's position, an integer, and only then joined to the
-- groups: grouped by the groups' columns, a claim's 200 jobs were sorted by two texts first,
-- 0.27 ms of this statement's time under EXPLAIN ANALYZE against 0.10 ms (10 groups; 0.2 us
-- a job of the claim: docs/measurements.md, 2026-12-03 (w)).
FROM (SELECT k.i, count(*) AS n FROM unnest(p_served) AS k(i) GROUP BY k.i) AS t
JOIN unnest(p_groups, p_weights, p_floors) WITH ORDINALITY
    AS g(type, tenant_id, cap, head_priority, head_run_after, head_id, weight, floor, i)
    USING (i)
WHERE g.tenant_id IS NOT NULL
ORDER BY g.tenant_id, g.type
ON CONFLICT (tenant_id, stage) DO UPDATE
SET pass = greatest(p.pass, excluded.floor) + excluded.taken / p.weight,
    floor = greatest(p.floor, excluded.floor),
    taken = p.taken + excluded.taken
$$;
