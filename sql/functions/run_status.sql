-- A run's status from its counts (pipeline.runs): the one place the rule is spelled, used by
-- the trigger that keeps the counts (count_runs) and by the migration that counted the runs
-- there were. `failed` as soon as a job of the run failed for good: the run can no longer end
-- done (a failed child's join never fires, a failed chain never reaches its next stage), even
-- while siblings of that job still run. `cancelled` wins over it: an operator stopped the run.
-- 'waiting' is reserved for durable waits (issue 23, item 5), which no count holds yet.
CREATE OR REPLACE FUNCTION pipeline.run_status(active bigint, failed bigint, cancelled bigint)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN cancelled > 0 THEN 'cancelled'
        WHEN failed > 0 THEN 'failed'
        WHEN active > 0 THEN 'running'
        ELSE 'done'
    END
$$;
