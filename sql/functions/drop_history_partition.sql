-- Retention, last step: a day detached from the history goes, with the outputs, join rows and
-- dedup keys of its jobs, but for the rows copied into pipeline.job_history_kept (their runs
-- live on). Also finishes a day whose pass stopped between its detach and its drop. Returns
-- what it deleted.
CREATE OR REPLACE FUNCTION pipeline.drop_history_partition(
    p_table regclass, OUT jobs bigint, OUT outputs bigint, OUT joins bigint, OUT keys bigint
)
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    EXECUTE format($q$
        WITH gone AS MATERIALIZED (
            SELECT d.id FROM %1$s d
            WHERE NOT EXISTS (SELECT 1 FROM pipeline.job_history_kept k WHERE k.id = d.id)
        ),
        o AS (DELETE FROM pipeline.outputs x USING gone WHERE x.job_id = gone.id RETURNING 1),
        j AS (DELETE FROM pipeline.joins x USING gone WHERE x.id = gone.id RETURNING 1),
        k AS (DELETE FROM pipeline.dedup_keys x USING gone WHERE x.job_id = gone.id RETURNING 1)
        SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM o), (SELECT count(*) FROM j),
               (SELECT count(*) FROM k)
    $q$, p_table)
    INTO jobs, outputs, joins, keys;
    EXECUTE format('DROP TABLE %s', p_table);
END
$$;
