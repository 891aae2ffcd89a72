-- The shard of the rollups (pipeline.finished_by_minute, tenant_finished_by_minute,
-- usage_by_day) that the calling transaction adds to: one that no other open transaction is
-- adding to, so that concurrent finishers never wait for each other's rows. A shard is taken
-- with a transaction-level advisory lock, tried from the backend's own (its pid modulo the
-- shards) onwards; the transaction keeps it for every later statement (remembered in a
-- setting local to the transaction), so it holds one shard, and one such lock, at most.
--
-- Before (0016-0027) the shard was the pid modulo 8 and nothing else: two acknowledgers whose
-- pids met modulo 8 upserted the same rows, and the second waited for the first's commit. With
-- 16 worker processes on one queue that wait was a fifth of the acknowledgements' time
-- (Lock:transactionid, benchmarks/fleet.py) and the drain fell to half of 8 processes'.
--
-- Only when every shard is taken does a transaction wait, for its own. It may hold row locks
-- of pipeline.active_jobs then (its DELETE ran first); a transaction that holds a shard and
-- waits for one of those rows (a single completion waits for its row) closes a cycle that
-- PostgreSQL's deadlock detector breaks, and the worker retries. That needs more concurrent
-- finishers than shards.
CREATE OR REPLACE FUNCTION pipeline.rollup_shard() RETURNS smallint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shards constant integer := 16;
    -- The advisory locks' first key: rollup shards, among whatever else takes such locks.
    shard_locks constant integer := hashtext('pg_pipeline rollup shards');
    held text := current_setting('pg_pipeline.rollup_shard', true);
    own integer := pg_backend_pid() % shards;
    candidate integer;
BEGIN
    IF held IS NOT NULL AND held <> '' THEN
        RETURN held::smallint;
    END IF;
    FOR i IN 0..shards - 1 LOOP
        candidate := (own + i) % shards;
        IF pg_try_advisory_xact_lock(shard_locks, candidate) THEN
            PERFORM set_config('pg_pipeline.rollup_shard', candidate::text, true);
            RETURN candidate::smallint;
        END IF;
    END LOOP;
    PERFORM pg_advisory_xact_lock(shard_locks, own);
    PERFORM set_config('pg_pipeline.rollup_shard', own::text, true);
    RETURN own::smallint;
END
$$;
