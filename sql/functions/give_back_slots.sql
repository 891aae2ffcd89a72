-- The claim's cap accounting, after it picked: a capped pair that took fewer jobs than the room
-- pipeline.lock_slots counted it in for (the pair ran dry, or a rate limit refused some) gets
-- the rest back on its counter, whose row the claim holds locked since. p_rooms holds each
-- group's room, by position in p_groups; p_picked_from, for each job taken, its group's
-- position. The claim calls it only when its capped groups took less than their rooms.
CREATE OR REPLACE FUNCTION pipeline.give_back_slots(
    p_groups pipeline.claim_group[], p_rooms integer[], p_picked_from integer[]
) RETURNS void
LANGUAGE sql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
UPDATE pipeline.tenant_slots AS s SET running = s.running - t.unused
FROM (
    SELECT g.type, g.tenant_id, g.room - count(k.i)::integer AS unused
    FROM unnest(p_groups, p_rooms) WITH ORDINALITY
        AS g(type, tenant_id, cap, head_priority, head_run_after, head_id, room, i)
    LEFT JOIN unnest(p_picked_from) AS k(i) ON k.i = g.i
    WHERE g.tenant_id IS NOT NULL AND g.cap IS NOT NULL AND g.room > 0
    GROUP BY g.type, g.tenant_id, g.room
    HAVING g.room > count(k.i)
) AS t
WHERE s.tenant_id = t.tenant_id AND s.stage = t.type
$$;
