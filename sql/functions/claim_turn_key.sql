-- The first key of the claim turns' advisory locks (pipeline.claim_turn), among whatever else
-- takes such locks on the database; the second key is the turn. The one place it is spelled:
-- claim_turn takes the locks with it, claim_turn_over gives them back, and the tests hold them.
--
-- One expression and no SET clause, so that the planner inlines it and folds it to a constant.
-- Without SET, its body is parsed with the caller's search_path, hence the name qualified.
CREATE OR REPLACE FUNCTION pipeline.claim_turn_key() RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT pg_catalog.hashtext('pg_pipeline claim turns')
$$;
