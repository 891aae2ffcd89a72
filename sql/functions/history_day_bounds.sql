-- Retention, once per run-by-run pass (pipeline/maintenance/retention.py, history_reach): each
-- day of pipeline.job_history with its bounds and the least id, least root id and greatest id of
-- its rows, each read at an end of one of the day's indexes (three descents a day, whatever it
-- holds). A run's jobs have ids and root ids at or above the run's id, so a day whose least id
-- and least root id are above every run a pass can take holds no job of them: its batches need
-- not read it (queries_admin.sql, prune_lock_runs). NULLs: an empty day, or a day of roots alone
-- (least_root).
--
-- The history's lock, held to the end of the caller's transaction, keeps every day listed a
-- partition until its ends are read: a pass detaching one waits.
CREATE OR REPLACE FUNCTION pipeline.history_day_bounds()
RETURNS TABLE (
    lower timestamptz, upper timestamptz, least_id bigint, least_root bigint, greatest_id bigint
)
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    day record;
BEGIN
    LOCK TABLE pipeline.job_history IN ACCESS SHARE MODE;
    FOR day IN
        SELECT d.part, d.lower, d.upper FROM pipeline.history_days AS d ORDER BY d.lower
    LOOP
        lower := day.lower;
        upper := day.upper;
        EXECUTE format(
            'SELECT (SELECT min(id) FROM %1$s), (SELECT min(root_id) FROM %1$s), '
            '(SELECT max(id) FROM %1$s)', day.part)
        INTO least_id, least_root, greatest_id;
        RETURN NEXT;
    END LOOP;
END
$$;
