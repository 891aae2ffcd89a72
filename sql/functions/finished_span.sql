-- The span of finish times in which the history may hold jobs of p_stage that ended as p_status
-- (either NULL: any), [lo, hi): what a jobs list filtered by stage or outcome reads of the
-- history (queries_admin.sql, jobs_list), its other days left out by partition pruning. Empty
-- (infinity, infinity) when no such job is kept: the list reads no day at all.
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
-- A span, not a list of days: partition pruning takes a range (here at run time, from the
-- InitPlans that read this), and a stage's days are mostly one run of days (a stage that is
-- new, retired, or runs every day). A stage seen in an old day and today reads the days
-- between as before.
CREATE OR REPLACE FUNCTION pipeline.finished_span(p_stage text, p_status text)
RETURNS TABLE (lo timestamptz, hi timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(least(d.lo, m.lo, k.lo), 'infinity'),
           coalesce(greatest(d.hi, m.hi, k.hi), 'infinity')
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
$$;
