-- The claim's picking: for each group of p_groups, up to its room (p_rooms, by position) of its
-- ready jobs, locked FOR UPDATE SKIP LOCKED so that concurrent claimers take disjoint jobs
-- without waiting. Returns each job with its group's position in p_groups, and its rate-limit
-- charges (pipeline.admit_limited; read from the row the lock fetches anyway: NULL, for a job
-- of a stage without limits, costs the plain claim nothing).
--
-- A group's jobs come in its order (priority, then run_after, then id), starting at its head
-- (found by pipeline.claim_groups): jobs at the head's priority from the head on, then lower
-- priorities. The index entries in front of the head, of jobs taken since the last vacuum, are
-- not stepped over again (0009). A job enqueued ahead of the head since is left to the next
-- claim, as one enqueued after the claim is.
--
-- One arm per ready index: "tenant_id IS NOT DISTINCT FROM" could use neither jobs_ready nor
-- jobs_ready_untenanted. Of each pair of arms, the one that does not apply to the group is cut by
-- a one-time filter on its tenant before it reads anything.
CREATE OR REPLACE FUNCTION pipeline.claim_pick(
    p_groups pipeline.claim_group[], p_rooms integer[]
) RETURNS TABLE (id bigint, group_at integer, limits jsonb)
LANGUAGE sql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
SELECT p.id, g.i, p.limits
FROM unnest(p_groups, p_rooms) WITH ORDINALITY
    AS g(type, tenant_id, cap, head_priority, head_run_after, head_id, room, i)
CROSS JOIN LATERAL (
    SELECT same.id, same.limits FROM (
        SELECT j.id, j.limits FROM pipeline.active_jobs j
        WHERE g.tenant_id IS NOT NULL AND j.status = 'queued' AND j.type = g.type
          AND j.tenant_id = g.tenant_id AND j.priority = g.head_priority
          AND (j.run_after, j.id) >= (g.head_run_after, g.head_id) AND j.run_after <= now()
        ORDER BY j.run_after, j.id
        LIMIT g.room
        FOR UPDATE SKIP LOCKED
    ) AS same
    UNION ALL
    SELECT same.id, same.limits FROM (
        SELECT j.id, j.limits FROM pipeline.active_jobs j
        WHERE g.tenant_id IS NULL AND j.status = 'queued' AND j.type = g.type
          AND j.tenant_id IS NULL AND j.priority = g.head_priority
          AND (j.run_after, j.id) >= (g.head_run_after, g.head_id) AND j.run_after <= now()
        ORDER BY j.run_after, j.id
        LIMIT g.room
        FOR UPDATE SKIP LOCKED
    ) AS same
    UNION ALL
    SELECT below.id, below.limits FROM (
        SELECT j.id, j.limits FROM pipeline.active_jobs j
        WHERE g.tenant_id IS NOT NULL AND j.status = 'queued' AND j.type = g.type
          AND j.tenant_id = g.tenant_id AND j.priority < g.head_priority AND j.run_after <= now()
        ORDER BY j.priority DESC, j.run_after, j.id
        LIMIT g.room
        FOR UPDATE SKIP LOCKED
    ) AS below
    UNION ALL
    SELECT below.id, below.limits FROM (
        SELECT j.id, j.limits FROM pipeline.active_jobs j
        WHERE g.tenant_id IS NULL AND j.status = 'queued' AND j.type = g.type
          AND j.tenant_id IS NULL AND j.priority < g.head_priority AND j.run_after <= now()
        ORDER BY j.priority DESC, j.run_after, j.id
        LIMIT g.room
        FOR UPDATE SKIP LOCKED
    ) AS below
    LIMIT g.room
) AS p
WHERE g.room > 0
$$;
