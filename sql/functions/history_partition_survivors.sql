-- Retention, first step for one day of the history that is wholly past the cutoff (see
-- pipeline/maintenance/retention.py): the runs of that partition that must outlive it. A run
-- survives while any job of it is elsewhere (queued or running, finished on another day, or
-- kept from a day dropped before), or, with p_keep_failed, when a job of it failed: its rows of
-- this day are then kept (pipeline.detach_history_partition). Read without a lock, in a
-- statement of its own. NULL when the day is gone (another pass, which holds no lock this
-- function waits for, dropped it).
--
-- A job elsewhere belongs to a run of the day only if its id or its root's id is one of the
-- day's run ids, all of which lie between the least and the greatest id or root id of the
-- day's rows (four index endpoints). So each other table is read for the ids and root ids in
-- that range alone: two index range scans each, which meet the jobs created while the day's
-- runs were (the few that finished on another day, those still queued), and a day of other
-- ids costs a descent of each index. The day itself is read once, its run ids hashed against
-- what was found. Probing each of the day's runs into every other day instead cost two index
-- descents per run and day: 100,000 runs a day into 107 other days took minutes.
CREATE OR REPLACE FUNCTION pipeline.history_partition_survivors(
    p_name text, p_keep_failed boolean
) RETURNS bigint[]
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p_part regclass;
    lo bigint;
    hi bigint;
    elsewhere text;
    survivors bigint[];
BEGIN
    -- The history first, then the day: the order every statement on the view takes them in. A
    -- pass detaching a day holds the history exclusively, and this waits for it before taking
    -- the day, rather than hold the day the detach waits for (a deadlock). Held to the end, it
    -- also keeps every other day a partition while their names, read below, are used.
    LOCK TABLE pipeline.job_history IN ACCESS SHARE MODE;
    p_part := to_regclass(p_name);
    IF p_part IS NULL THEN
        RETURN NULL;
    END IF;
    EXECUTE format($q$
        SELECT least((SELECT min(id) FROM %1$s), (SELECT min(root_id) FROM %1$s)),
               greatest((SELECT max(id) FROM %1$s), (SELECT max(root_id) FROM %1$s))
    $q$, p_part)
    INTO lo, hi;
    IF lo IS NULL THEN
        RETURN '{}';  -- an empty day
    END IF;
    -- Each other day by its own name: a range on the parent would read this day's rows too (all
    -- in the range), as the partition key cannot exclude it.
    SELECT string_agg(format(
               'SELECT id FROM %1$s WHERE id BETWEEN $1 AND $2 '
               'UNION ALL SELECT root_id FROM %1$s WHERE root_id BETWEEN $1 AND $2',
               i.inhrelid::regclass), ' UNION ALL ' ORDER BY i.inhrelid)
    INTO elsewhere
    FROM pg_inherits AS i
    WHERE i.inhparent = 'pipeline.job_history'::regclass AND i.inhrelid <> p_part;
    EXECUTE format($q$
        SELECT coalesce(array_agg(r.run_id ORDER BY r.run_id), '{}')
        FROM (SELECT DISTINCT coalesce(root_id, id) AS run_id FROM %1$s) AS r
        WHERE r.run_id IN (
            SELECT id FROM pipeline.active_jobs WHERE id BETWEEN $1 AND $2
            UNION ALL
            SELECT root_id FROM pipeline.active_jobs WHERE root_id BETWEEN $1 AND $2
            UNION ALL
            SELECT id FROM pipeline.job_history_kept WHERE id BETWEEN $1 AND $2
            UNION ALL
            SELECT root_id FROM pipeline.job_history_kept WHERE root_id BETWEEN $1 AND $2
            UNION ALL
            SELECT id FROM %1$s WHERE $3 AND status = 'failed'
            UNION ALL
            SELECT root_id FROM %1$s WHERE $3 AND status = 'failed'
            %2$s
        )
    $q$, p_part, CASE WHEN elsewhere IS NOT NULL THEN 'UNION ALL ' || elsewhere ELSE '' END)
    INTO survivors
    USING lo, hi, p_keep_failed;
    RETURN survivors;
EXCEPTION
    WHEN undefined_table THEN
        RETURN NULL;
END
$$;
