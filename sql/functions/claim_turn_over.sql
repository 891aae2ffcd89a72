-- The end of a claim's turn (pipeline.claim_turn): turn p_turn, which this session took, given
-- back for the next claim in line. pipeline.claim calls it as its dealing ends, and on an error:
-- a session's lock outlives a rollback.
CREATE OR REPLACE FUNCTION pipeline.claim_turn_over(p_turn integer) RETURNS void
LANGUAGE sql
VOLATILE
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
SELECT pg_advisory_unlock(pipeline.claim_turn_key(), p_turn)
$$;
