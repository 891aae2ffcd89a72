-- The rollups of finished jobs (pipeline.finished_by_minute, and per tenant
-- pipeline.tenant_finished_by_minute), kept in the statement that moves jobs into the history
-- or out of it: `pipeline status`, the dashboard and the metrics read a day's figures from a
-- few thousand rollup rows instead of the day's million history rows. Statement-level, over
-- the statement's transition table `changed`: a completion of a hundred jobs costs one upsert
-- per (minute, stage, status) it touches, not a hundred.
--
-- An insert counts jobs in (a job finished); a delete counts them out (a retry moved a failed
-- job back to the queue, a prune deleted a run), so the rollups say what the history holds, as
-- the views said when they read it. Deletes older than ROLLUP_KEEP (two days: see
-- pipeline/history.py) count nothing: their minutes are deleted, or soon will be. The largest
-- attempts and the shortest and longest run time of a minute are kept as seen: a delete
-- cannot move them.
--
-- Each job's minute is date_bin's, an integer division of the timestamp: date_trunc('minute')
-- gives the same minute in every time zone whose offset is whole minutes (all of today's),
-- through the session's time zone rules, at 0.19 us a row where date_bin costs 0.02. Its run
-- time is date_part's double precision: extract() computes a numeric first (0.45 us a row
-- with the cast, 0.21 for date_part). Together a third of what the rollup spent per row in an
-- acknowledgement (1.2 us, EXPLAIN ANALYZE of a batch of 184).
--
-- Each job's run time is bucketed by an expression the planner inlines
-- (pipeline.run_time_bucket), and each group's histogram made once from its buckets
-- (pipeline.run_time_histogram_of): the aggregate pipeline.run_time_histogram, whose PL/pgSQL
-- step ran once per job, cost 2.6 us a job in groups of 100 where this costs 1.0.
--
-- The jobs are aggregated once, by GROUPING SETS: each (minute, stage, status) and each
-- (minute, stage, status, tenant) a group of one pass over them, from which both upserts take
-- their rows. Aggregated twice, once per rollup, the acknowledgement of 10 tenants' jobs cost
-- 0.3-0.5 us a job more, an untenanted one the same (docs/measurements.md, 2026-12-03 (t)).
--
-- Concurrent finishers do not queue on one row: each transaction adds to a shard of a minute
-- that no other open one adds to (pipeline.rollup_shard), and readers sum the shards. Rows are
-- upserted in key order, so two statements of one transaction lock its rows in one order.
CREATE OR REPLACE FUNCTION pipeline.roll_up_finished() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- Its statements planned once per connection (see count_runs.sql).
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    weight integer := CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END;
    backend_shard smallint := pipeline.rollup_shard();
BEGIN
    WITH f AS (
        SELECT minute, stage, tenant_id, status, attempts, run_s,
               pipeline.run_time_bucket(run_s) AS bucket
        FROM (SELECT date_bin('1 minute', finished_at, timestamptz '2000-01-01 00:00+00')
                         AS minute,
                     type AS stage, tenant_id, status, attempts,
                     CASE WHEN status = 'done' AND started_at IS NOT NULL
                          THEN greatest(date_part('epoch', finished_at - started_at), 0)
                     END AS run_s
              FROM changed
              WHERE weight = 1 OR finished_at >= now() - interval '2 days') AS c
    ),
    -- whole: 1 for a (minute, stage, status) group, 0 for a tenant's (tenant_id NULL: the
    -- untenanted jobs, which have no tenant row).
    g AS MATERIALIZED (
        SELECT minute, stage, tenant_id, status, grouping(tenant_id) AS whole,
               weight * count(*) AS jobs, weight * sum(attempts) AS attempts,
               CASE WHEN weight = 1 THEN max(attempts) END AS max_attempts,
               weight * count(run_s) AS timed,
               CASE WHEN weight = 1 THEN min(run_s) END AS min_run_s,
               CASE WHEN weight = 1 THEN max(run_s) END AS max_run_s,
               pipeline.run_time_histogram_of(array_agg(bucket) FILTER (WHERE bucket IS NOT NULL),
                                             weight) AS run_hist
        FROM f
        GROUP BY GROUPING SETS ((minute, stage, status), (minute, stage, status, tenant_id))
    ),
    whole AS (
        INSERT INTO pipeline.finished_by_minute AS r
            (minute, stage, status, shard, jobs, attempts, max_attempts, timed, min_run_s,
             max_run_s, run_hist)
        SELECT minute, stage, status, backend_shard, jobs, attempts, max_attempts, timed,
               min_run_s, max_run_s, run_hist
        FROM g
        WHERE whole = 1
        ORDER BY minute, stage, status
        ON CONFLICT (minute, stage, status, shard) DO UPDATE
        SET jobs = r.jobs + excluded.jobs,
            attempts = r.attempts + excluded.attempts,
            max_attempts = greatest(r.max_attempts, excluded.max_attempts),
            timed = r.timed + excluded.timed,
            min_run_s = least(r.min_run_s, excluded.min_run_s),
            max_run_s = greatest(r.max_run_s, excluded.max_run_s),
            run_hist = pipeline.histogram_add(r.run_hist, excluded.run_hist)
    )
    INSERT INTO pipeline.tenant_finished_by_minute AS r
        (tenant_id, minute, stage, status, shard, jobs, attempts, max_attempts, timed,
         min_run_s, max_run_s, run_hist)
    SELECT tenant_id, minute, stage, status, backend_shard, jobs, attempts, max_attempts, timed,
           min_run_s, max_run_s, run_hist
    FROM g
    WHERE whole = 0 AND tenant_id IS NOT NULL
    ORDER BY tenant_id, minute, stage, status
    ON CONFLICT (tenant_id, minute, stage, status, shard) DO UPDATE
    SET jobs = r.jobs + excluded.jobs,
        attempts = r.attempts + excluded.attempts,
        max_attempts = greatest(r.max_attempts, excluded.max_attempts),
        timed = r.timed + excluded.timed,
        min_run_s = least(r.min_run_s, excluded.min_run_s),
        max_run_s = greatest(r.max_run_s, excluded.max_run_s),
        run_hist = pipeline.histogram_add(r.run_hist, excluded.run_hist);
    RETURN NULL;
END
$$;
