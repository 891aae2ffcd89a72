-- Retention, first step for one day of the history that is wholly past the cutoff (see
-- pipeline/maintenance/retention.py): the runs of that partition that must outlive it. A run
-- survives while any job of it is elsewhere (queued or running, finished on another day, or
-- kept from a day dropped before), or, with p_keep_failed, when a job of it failed: its rows of
-- this day are then kept (pipeline.detach_history_partition). Read without a lock, in a
-- statement of its own: it reads the whole day, a probe per run into each table. NULL when the
-- day is gone (another pass, which holds no lock this function waits for, dropped it).
CREATE OR REPLACE FUNCTION pipeline.history_partition_survivors(
    p_name text, p_keep_failed boolean
) RETURNS bigint[]
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p_part regclass;
    survivors bigint[];
BEGIN
    -- The history first, then the day: the order every statement on the view takes them in. A
    -- pass detaching a day holds the history exclusively, and this waits for it before taking
    -- the day, rather than hold the day the detach waits for (a deadlock).
    LOCK TABLE pipeline.job_history IN ACCESS SHARE MODE;
    p_part := to_regclass(p_name);
    IF p_part IS NULL THEN
        RETURN NULL;
    END IF;
    EXECUTE format($q$
        SELECT coalesce(array_agg(r.run_id ORDER BY r.run_id), '{}')
        FROM (SELECT DISTINCT coalesce(root_id, id) AS run_id FROM %1$s) AS r
        WHERE EXISTS (SELECT 1 FROM pipeline.active_jobs a
                      WHERE a.id = r.run_id OR a.root_id = r.run_id)
           OR EXISTS (SELECT 1 FROM pipeline.job_history h
                      WHERE (h.id = r.run_id OR h.root_id = r.run_id) AND h.tableoid <> %2$s)
           OR EXISTS (SELECT 1 FROM pipeline.job_history_kept k
                      WHERE k.id = r.run_id OR k.root_id = r.run_id)
           OR ($1 AND EXISTS (SELECT 1 FROM %1$s f
                              WHERE (f.id = r.run_id OR f.root_id = r.run_id)
                                AND f.status = 'failed'))
    $q$, p_part, p_part::oid)
    INTO survivors
    USING p_keep_failed;
    RETURN survivors;
EXCEPTION
    WHEN undefined_table THEN
        RETURN NULL;
END
$$;
