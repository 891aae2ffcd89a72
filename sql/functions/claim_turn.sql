-- The claim's turnstile, its first step: the calling claim waits here, before it reads a row,
-- until one of a few turns is free, and holds it until its dealing ends (a session's advisory
-- lock, which pipeline.claim gives back with pipeline.claim_turn_over, before it commits). So
-- at most that many claims of any worker deal at once on the database, and the others wait
-- asleep, not on the CPU. Returns the turn taken; NULL when turns are off.
--
-- Why: concurrent claims all start from the same head of the ready index. Each walks past the
-- rows the others hold locked (FOR UPDATE SKIP LOCKED reads each one's heap tuple to find its
-- lock) and past the index entries of jobs just taken (a job's move to running is not a HOT
-- update, and its old entry cannot be marked dead while any snapshot may see it): 2.3-3.7 ms of
-- CPU a claim with 16 worker processes claiming, against 0.55 ms and 9 us a job for a claim
-- alone, so 16 processes drained slower than 4 (benchmarks/FLEET.md). A claim that waited for
-- its turn reads after the previous holder dealt (each statement of pipeline.claim_deal takes a
-- snapshot of its own): the only locked rows it meets are those of the claim committing just
-- before it, which it steps past once.
--
-- How many turns: the setting pg_pipeline.claim_turns (ALTER DATABASE ... SET, ALTER ROLE ...
-- SET, or PGOPTIONS for one worker's connections); unset, empty or not a whole number, one (the
-- default); 0, no turnstile: every claim runs at once, as before it existed. One by default: on
-- 2 cores, in drains of 200,000 jobs, it brought 16 processes' rate and CPU a job to 4
-- processes' (from 0.56-0.98 of their rate), and cost one or four processes nothing measurable
-- (benchmarks/FLEET.md). A mistyped value falls back to the default, not to none: turning the
-- turnstile off takes a deliberate 0. The turn is not held through the claim's commit
-- (pipeline.claim says why), so claims flush their WAL together, as without turns; the claims
-- of idle workers woken by one announcement still queue for it.
--
-- No deadlock: a claim takes its turn before any other lock, and waits for it holding none; what
-- the holder may wait for (another claim's counter or pass rows) that claim's commit frees, which
-- needs no turn. (Only a transaction that claims twice, holding its first claim's rows while it
-- waits for a turn, could close a circle; the deadlock detector breaks it. Workers claim in a
-- transaction each.)
-- A backend tries its pid modulo the turns first, then the others; only when every turn is
-- taken does it wait, for its own.
CREATE OR REPLACE FUNCTION pipeline.claim_turn() RETURNS integer
LANGUAGE plpgsql
VOLATILE
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    setting text := current_setting('pg_pipeline.claim_turns', true);
    -- Bounded, so that a mistyped large number cannot make every claim try locks in a loop.
    -- Unset, the setting reads as NULL, and the match as NULL: the default.
    turns integer := CASE WHEN setting ~ '^\s*\d{1,4}\s*$' THEN least(setting::integer, 1024)
                          ELSE 1 END;
    turn_locks constant integer := pipeline.claim_turn_key();
    own integer;
BEGIN
    IF turns = 0 THEN
        RETURN NULL;
    END IF;
    own := pg_backend_pid() % turns;
    FOR i IN 0..turns - 1 LOOP
        IF pg_try_advisory_lock(turn_locks, (own + i) % turns) THEN
            RETURN (own + i) % turns;
        END IF;
    END LOOP;
    PERFORM pg_advisory_lock(turn_locks, own);
    RETURN own;
END
$$;
