-- Retention's deletion of runs' references to blobs (pipeline.blob_refs): the references of the
-- runs `run_ids` (ids that are no run's have none) go, and their blob keys become candidates
-- for the blob sweep (pipeline.blob_garbage; pipeline/maintenance/blob_sweep.py), which keeps
-- those another run still references. Called by both ways a run is pruned, in the statement
-- that deletes its jobs: run by run (prune_runs, sql/queries_admin.sql) and with its day
-- (drop_history_partition.sql). Returns the number of keys made candidates.
--
-- VOLATILE: called from a WITH of the caller's statement, its statement takes a snapshot of its
-- own, when it is called, not the caller's. That is safe here: no other part of the callers'
-- statements reads or writes these two tables, and a reference committed in between to a run
-- being pruned would go with the run all the same. A SELECT in WITH runs only when the
-- statement reads it: the callers read its result.
CREATE OR REPLACE FUNCTION pipeline.drop_blob_refs(run_ids bigint[]) RETURNS bigint
LANGUAGE sql VOLATILE
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
    WITH refs AS (
        DELETE FROM pipeline.blob_refs AS b
        USING unnest(run_ids) AS r(run_id)
        WHERE b.run_id = r.run_id
        RETURNING b.blob_key
    ),
    garbage AS (
        -- `since` moves on a key already there: a sweep deleting the blob of the older row
        -- (which another upload of the same bytes may have stored again since) leaves this one.
        INSERT INTO pipeline.blob_garbage (blob_key)
        SELECT DISTINCT blob_key FROM refs ORDER BY 1
        ON CONFLICT (blob_key) DO UPDATE SET since = excluded.since
        RETURNING 1
    )
    SELECT count(*) FROM garbage
$$;
