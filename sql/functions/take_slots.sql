-- The claim's cap accounting, after it picked: a capped pair's counter is raised by the jobs it
-- took (its row is locked since pipeline.lock_slots), and every pair that took something is
-- marked served now, which puts it behind the others in pipeline.claim_groups' order.
-- p_picked_from holds, for each job taken, its group's position in p_groups.
CREATE OR REPLACE FUNCTION pipeline.take_slots(
    p_groups pipeline.claim_group[], p_picked_from integer[]
) RETURNS void
LANGUAGE sql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
WITH taken AS (
    SELECT g.type, g.tenant_id, g.cap IS NOT NULL AS capped, count(*)::integer AS n
    FROM unnest(p_picked_from) AS k(i)
    JOIN unnest(p_groups) WITH ORDINALITY
        AS g(type, tenant_id, cap, head_priority, head_run_after, head_id, i) USING (i)
    WHERE g.tenant_id IS NOT NULL
    GROUP BY 1, 2, 3
),
counted AS (
    UPDATE pipeline.tenant_slots AS s
    SET running = s.running + t.n, served_at = clock_timestamp()
    FROM taken t
    WHERE t.capped AND s.tenant_id = t.tenant_id AND s.stage = t.type
)
-- An uncapped pair's row is marked only where no one else holds it: waiting here, in whatever
-- order the rows come, could deadlock two claimers; a missed mark costs a little fairness.
UPDATE pipeline.tenant_slots AS s SET served_at = clock_timestamp()
FROM (
    SELECT s2.tenant_id, s2.stage FROM pipeline.tenant_slots s2
    WHERE (s2.stage, s2.tenant_id) IN (SELECT t.type, t.tenant_id FROM taken t WHERE NOT t.capped)
      AND EXISTS (SELECT 1 FROM taken t WHERE NOT t.capped)  -- else no row is read
    FOR UPDATE OF s2 SKIP LOCKED
) AS l
WHERE s.tenant_id = l.tenant_id AND s.stage = l.stage
$$;
