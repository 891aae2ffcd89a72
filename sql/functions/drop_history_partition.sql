-- Retention, last step: a day detached from the history goes, with the outputs, join rows, dedup
-- keys, attempts, run rows (pipeline.runs), reruns (run_generations) and blob references
-- (blob_refs, their blobs made candidates for the sweep) of its jobs, but for the
-- rows copied into pipeline.job_history_kept (their runs live on). Also finishes a day whose pass
-- stopped between its detach and its drop. Returns what it deleted: zeros when the table is gone
-- already (another pass dropped it).
CREATE OR REPLACE FUNCTION pipeline.drop_history_partition(
    p_name text, OUT jobs bigint, OUT outputs bigint, OUT joins bigint, OUT keys bigint
)
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p_table regclass := to_regclass(p_name);
BEGIN
    jobs := 0; outputs := 0; joins := 0; keys := 0;
    IF p_table IS NULL THEN
        RETURN;
    END IF;
    EXECUTE format($q$
        WITH gone AS MATERIALIZED (
            SELECT d.id FROM %1$s d
            WHERE NOT EXISTS (SELECT 1 FROM pipeline.job_history_kept k WHERE k.id = d.id)
        ),
        o AS (DELETE FROM pipeline.outputs x USING gone WHERE x.job_id = gone.id RETURNING 1),
        j AS (DELETE FROM pipeline.joins x USING gone WHERE x.id = gone.id RETURNING 1),
        k AS (DELETE FROM pipeline.dedup_keys x USING gone WHERE x.job_id = gone.id RETURNING 1),
        -- A run whose root goes is gone whole (a run still going keeps its root); run only
        -- for its effect, as every data-modifying WITH is.
        r AS (DELETE FROM pipeline.runs x USING gone WHERE x.run_id = gone.id RETURNING 1),
        g AS (DELETE FROM pipeline.run_generations x USING gone WHERE x.run_id = gone.id),
        a AS (DELETE FROM pipeline.job_attempts x USING gone WHERE x.job_id = gone.id),
        w AS (DELETE FROM pipeline.waits x USING gone WHERE x.job_id = gone.id),
        -- So do its references to blobs, their blobs candidates for the blob sweep
        -- (drop_blob_refs.sql). One row, read below: a SELECT in WITH runs only when read.
        b AS (SELECT pipeline.drop_blob_refs(ARRAY(SELECT id FROM gone)))
        SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM o), (SELECT count(*) FROM j),
               (SELECT count(*) FROM k)
        FROM b
    $q$, p_table)
    INTO jobs, outputs, joins, keys;
    EXECUTE format('DROP TABLE %s', p_table);
END
$$;
