-- The span of finish times in which the history may hold jobs of p_stage that ended as p_status
-- (either NULL: any), [lo, hi): what a jobs list filtered by stage or outcome reads of the
-- history (queries_admin.sql, jobs_finished_span and jobs_list), its other days left out by
-- partition pruning. Empty, [epoch, epoch), when no such job is kept: the list reads no day at
-- all (a finite time: psycopg reads no infinite one). NULL, NULL when the span is the whole
-- history's: the list reads every day, and spends nothing on a bound that leaves none out
-- (each row a walk reads would be taken apart up to finished_at, 3.4 ms more over a walk of
-- 160,000 rows).
--
-- From what knows where jobs finished without an index on the history: the rollups' minutes
-- (pipeline.finished_by_minute, every statement that moves jobs into the history counts them
-- there), the days those minutes were folded into once dropped (pipeline.finished_days, and
-- the history as migration 0030 found it), and the rows retention kept of dropped days
-- (pipeline.job_history_kept, small). All of them say where such a job was, not that it still
-- is (a retry or a prune takes jobs out): the span may cover days that no longer hold one,
-- never miss one that does. Rows written straight into a day's partition, not through
-- pipeline.job_history, escape the rollups and are not found by a filtered list (a bulk load
-- must add its days to pipeline.finished_days).
--
-- A span, not a list of days: partition pruning takes a range, and a stage's days are mostly
-- one run of days (a stage that is new, retired, or runs every day). A stage seen in an old
-- day and today reads the days between as before.
CREATE OR REPLACE FUNCTION pipeline.finished_span(p_stage text, p_status text)
RETURNS TABLE (lo timestamptz, hi timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH matching AS (
        SELECT least(d.lo, m.lo, k.lo) AS lo, greatest(d.hi, m.hi, k.hi) AS hi
        FROM (SELECT min(day) AS lo, max(day) + interval '1 day' AS hi
              FROM pipeline.finished_days
              WHERE (p_stage IS NULL OR stage = p_stage)
                AND (p_status IS NULL OR status = p_status)) AS d,
             (SELECT min(minute) AS lo, max(minute) + interval '1 minute' AS hi
              FROM pipeline.finished_by_minute
              WHERE (p_stage IS NULL OR stage = p_stage)
                AND (p_status IS NULL OR status = p_status)) AS m,
             (SELECT min(finished_at) AS lo, max(finished_at) + interval '1 microsecond' AS hi
              FROM pipeline.job_history_kept
              WHERE (p_stage IS NULL OR type = p_stage)
                AND (p_status IS NULL OR status = p_status)) AS k
    ),
    -- The history's, from the same sources but the kept rows (older than every day it has):
    -- the minutes by their primary key's ends.
    whole AS (
        SELECT least((SELECT min(day) FROM pipeline.finished_days),
                     (SELECT min(minute) FROM pipeline.finished_by_minute)) AS lo,
               greatest((SELECT max(day) + interval '1 day' FROM pipeline.finished_days),
                        (SELECT max(minute) + interval '1 minute'
                         FROM pipeline.finished_by_minute)) AS hi
    ),
    -- Whether the span leaves a day of the history out, at either end.
    narrower AS (
        SELECT s.lo, s.hi,
               date_bin('1 day', s.lo, timestamptz '2000-01-01 00:00+00')
                   > date_bin('1 day', w.lo, timestamptz '2000-01-01 00:00+00')
               OR date_bin('1 day', s.hi - interval '1 microsecond',
                           timestamptz '2000-01-01 00:00+00')
                   < date_bin('1 day', w.hi - interval '1 microsecond',
                              timestamptz '2000-01-01 00:00+00') AS narrower
        FROM matching AS s, whole AS w
    )
    SELECT CASE WHEN lo IS NULL THEN 'epoch' WHEN narrower THEN lo END,
           CASE WHEN lo IS NULL THEN 'epoch' WHEN narrower THEN hi END
    FROM narrower
$$;
