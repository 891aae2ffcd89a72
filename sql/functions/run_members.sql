-- The runs among run_ids (distinct) that have jobs, each with its number of jobs and whether any
-- of them is live for a prune with this cutoff: queued, running or waiting, finished at or after
-- the cutoff, or failed when keep_failed. What retention asks of the runs it meets before it
-- locks them (queries_admin.sql, prune_lock_runs), and again under its locks before it deletes
-- them (prune_runs). A run not returned has no job left.
--
-- A job of a run is its root (id = run) or names it (root_id = run), so every one has an id or a
-- root id between the least and the greatest of run_ids: each table and day is read for that
-- range, two index range scans, and the rows are matched to the runs by hash. A probe per run
-- into every day instead cost two index descents per run and day (0.1 s a batch of 100 runs at
-- 36 days). `k`: the runs a row can belong to, its id and its root.
--
-- But the days of the history finished from skip_from until skip_to, which the caller knows to
-- hold no job of any of run_ids (retention.py, history_reach: days whose least id and least root
-- id are above every run its pass takes, closed to late rows): the partition key's range leaves
-- them out of the plan, so a statement plans and reads the few days its runs can be in, not all
-- of them: at 108 days, 10 of them, and a batch's two statements took 11 ms instead of 36
-- (docs/measurements.md, 2026-12-04 (al)). skip_from = skip_to: every day. The hot table and
-- the kept rows are read for the range whatever their finish times.
--
-- A SQL function of one SELECT, STABLE and without SET options, so that the planner inlines it
-- into the caller's statement: the plan, and its index conditions, are those of the query
-- spelled in place. The planner inlines no call whose arguments hold a sub-select: a statement
-- passes the runs it computes as a value of a row (prune_lock_runs). The bounds of the range
-- are sub-selects, InitPlans, which the planner estimates as known values: 432 rows of a day of
-- 86,400 for the id range; as join values (the least and greatest of the runs joined in), 9,600,
-- a plan for a range of a ninth of every day. Without SET, its body is parsed with the caller's
-- search_path, hence every name, type and operator qualified here.
CREATE OR REPLACE FUNCTION pipeline.run_members(
    run_ids bigint[], cutoff timestamptz, keep_failed boolean,
    skip_from timestamptz, skip_to timestamptz
) RETURNS TABLE (run_id bigint, jobs bigint, live boolean)
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT k.run_id, pg_catalog.count(*),
           pg_catalog.bool_or(
               j.status OPERATOR(pg_catalog.=) ANY ('{queued,running,waiting}'::pg_catalog.text[])
               OR coalesce(j.finished_at OPERATOR(pg_catalog.>=) cutoff, false)
               OR (keep_failed AND j.status OPERATOR(pg_catalog.=) 'failed'))
    FROM (
        SELECT a.id, a.root_id, a.status, a.finished_at FROM pipeline.active_jobs AS a
        UNION ALL
        SELECT h.id, h.root_id, h.status, h.finished_at FROM pipeline.job_history AS h
        WHERE h.finished_at OPERATOR(pg_catalog.<) skip_from
           OR h.finished_at OPERATOR(pg_catalog.>=) skip_to
        UNION ALL
        SELECT h.id, h.root_id, h.status, h.finished_at FROM pipeline.job_history_kept AS h
    ) AS j
    CROSS JOIN LATERAL (
        VALUES (j.id), (CASE WHEN j.root_id OPERATOR(pg_catalog.<>) j.id THEN j.root_id END)
    ) AS k(run_id)
    WHERE (j.id OPERATOR(pg_catalog.>=)
                   (SELECT pg_catalog.min(r) FROM pg_catalog.unnest(run_ids) AS r)
           AND j.id OPERATOR(pg_catalog.<=)
                   (SELECT pg_catalog.max(r) FROM pg_catalog.unnest(run_ids) AS r)
           OR j.root_id OPERATOR(pg_catalog.>=)
                   (SELECT pg_catalog.min(r) FROM pg_catalog.unnest(run_ids) AS r)
              AND j.root_id OPERATOR(pg_catalog.<=)
                   (SELECT pg_catalog.max(r) FROM pg_catalog.unnest(run_ids) AS r))
      AND k.run_id OPERATOR(pg_catalog.=) ANY (SELECT pg_catalog.unnest(run_ids))
    GROUP BY k.run_id
$$;
