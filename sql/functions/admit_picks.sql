-- The claim's rate-limit step (docs/limits.md), for a step's picks (p_ids, each with its
-- group's position in p_groups, p_picked_from; p_capped_ids those of capped groups;
-- p_limited_ids those with charges, p_charges theirs): the same
-- three lists less the jobs a limit leaves queued (pipeline.admit_limited), plus what their
-- groups take instead from further on, past the blocked keys (pipeline.pick_past_blocked),
-- when admitted. A capped group takes no more than it picked, so never more than its room.
-- pipeline.claim calls it only when a picked job carries charges; p_first on its first step,
-- which may wait for a key's lock (pipeline.admit_limited).
CREATE OR REPLACE FUNCTION pipeline.admit_picks(
    p_groups pipeline.claim_group[], INOUT p_ids bigint[], INOUT p_picked_from integer[],
    INOUT p_capped_ids bigint[], p_limited_ids bigint[], p_charges jsonb[], p_first boolean
)
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    refused bigint[] := pipeline.admit_limited(p_limited_ids, p_charges, p_first);
    more bigint[];  -- jobs picked past a blocked key, their groups' positions and charges
    more_from integer[];
    more_charges jsonb[];
BEGIN
    IF cardinality(refused) = 0 THEN
        RETURN;
    END IF;
    SELECT array_agg(p.id), array_agg(p.group_at), array_agg(p.limits)
    INTO more, more_from, more_charges
    FROM pipeline.pick_past_blocked(
        p_groups, p_ids, refused,
        ARRAY(SELECT k.g FROM unnest(p_ids, p_picked_from) AS k(id, g) WHERE k.id = ANY (refused))
    ) AS p;
    IF more IS NOT NULL THEN
        -- It waits for no key: this claim may hold some already.
        refused := refused || pipeline.admit_limited(
            ARRAY(SELECT m.id FROM unnest(more, more_charges) AS m(id, c) WHERE m.c IS NOT NULL),
            ARRAY(SELECT m.c FROM unnest(more_charges) AS m(c) WHERE m.c IS NOT NULL),
            false
        );
        p_ids := p_ids || more;
        p_picked_from := p_picked_from || more_from;
        p_capped_ids := p_capped_ids || ARRAY(
            SELECT k.id FROM unnest(more, more_from) AS k(id, g)
            WHERE (p_groups[k.g]).cap IS NOT NULL);
    END IF;
    SELECT array_agg(k.id ORDER BY k.o), array_agg(k.g ORDER BY k.o)
    INTO p_ids, p_picked_from
    FROM unnest(p_ids, p_picked_from) WITH ORDINALITY AS k(id, g, o)
    WHERE k.id <> ALL (refused);
    p_capped_ids := ARRAY(SELECT unnest(p_capped_ids) EXCEPT SELECT unnest(refused));
END
$$;
