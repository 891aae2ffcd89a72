-- The claim's cap accounting, after it picked: a capped pair's counter is raised by the jobs it
-- took (its row is locked since pipeline.lock_slots). p_picked_from holds, for each job taken,
-- its group's position in p_groups. The passes the claim advances are pipeline.take_passes'.
CREATE OR REPLACE FUNCTION pipeline.take_slots(
    p_groups pipeline.claim_group[], p_picked_from integer[]
) RETURNS void
LANGUAGE sql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
UPDATE pipeline.tenant_slots AS s SET running = s.running + t.n
FROM (
    SELECT g.type, g.tenant_id, count(*)::integer AS n
    FROM unnest(p_picked_from) AS k(i)
    JOIN unnest(p_groups) WITH ORDINALITY
        AS g(type, tenant_id, cap, head_priority, head_run_after, head_id, i) USING (i)
    WHERE g.tenant_id IS NOT NULL AND g.cap IS NOT NULL
    GROUP BY 1, 2
) AS t
WHERE s.tenant_id = t.tenant_id AND s.stage = t.type
$$;
