-- A run's status from its counts (pipeline.runs): the one place the rule is spelled, used by
-- the triggers that keep the counts (count_runs, count_waits) and by the migration that counted
-- the runs there were. `failed` as soon as a job of the run failed for good: the run can no
-- longer end done (a failed child's join never fires, a failed chain never reaches its next
-- stage), even while siblings of that job still run. `cancelled` wins over it: an operator
-- stopped the run. `waiting` when every active job waits for input (`waiting` is the part of
-- `active` that does): nothing runs until a signal or a deadline. `waiting` comes last, with a
-- default, so that migration 0017 (which calls it with three counts) still runs.
CREATE OR REPLACE FUNCTION pipeline.run_status(
    active bigint, failed bigint, cancelled bigint, waiting bigint DEFAULT 0
)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN cancelled > 0 THEN 'cancelled'
        WHEN failed > 0 THEN 'failed'
        WHEN active > waiting THEN 'running'
        WHEN waiting > 0 THEN 'waiting'
        ELSE 'done'
    END
$$;
