-- The claim: up to p_limit ready jobs of p_types for worker p_worker, fairly across tenants and
-- within each (tenant, stage) pair's cap (p_caps: the worker's default caps by p_cap_stages).
-- Concurrent claimers take disjoint jobs; a few claim at once, and the others wait their turn.
--
-- This function holds the turn; its parts, one file each, do the rest:
--   pipeline.claim_turn    how many claims run at once (the turnstile, taken first, before any
--                          read), and pipeline.claim_turn_over, which gives the turn back;
--   pipeline.claim_deal    the batch dealt out: which groups of ready work, how many of each,
--                          which jobs, marked running (it names its own parts).
--
-- The turn is given back as the dealing ends, before the claim commits: held through the
-- commit, it lined up the commits of every claim that took jobs, each waiting for the one
-- before it to flush its WAL, which a server with slow flushes (network storage) would feel
-- with every claim; and the claims of idle workers woken by one announcement waited for each
-- other's flushes. The next claim then reads while this one commits: it steps past this
-- claim's rows, still locked, once, and no other claim's (sql/functions/claim_turn.sql).
-- Given back on an error too: a turn is a session's lock, which a rollback would not free, and
-- one kept by an idle connection would stop every claim of the database.
CREATE OR REPLACE FUNCTION pipeline.claim(
    p_types text[], p_limit integer, p_worker uuid, p_cap_stages text[], p_caps integer[]
) RETURNS SETOF pipeline.claimed_job
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    turn integer := pipeline.claim_turn();  -- NULL: turns are off, and none was taken
BEGIN
    IF turn IS NULL THEN
        -- No block with an exception handler, which would cost every claim a subtransaction.
        RETURN QUERY SELECT * FROM pipeline.claim_deal(p_types, p_limit, p_worker, p_cap_stages,
                                                       p_caps);
        RETURN;
    END IF;
    BEGIN
        RETURN QUERY SELECT * FROM pipeline.claim_deal(p_types, p_limit, p_worker, p_cap_stages,
                                                       p_caps);
    -- OTHERS leaves out a cancel (a statement_timeout's too) and a failed assertion.
    EXCEPTION WHEN OTHERS OR query_canceled OR assert_failure THEN
        PERFORM pipeline.claim_turn_over(turn);
        RAISE;
    END;
    PERFORM pipeline.claim_turn_over(turn);
END
$$;
