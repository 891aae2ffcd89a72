-- An attempt's usage as (counter, amount) rows: wall_s and cpu_s when measured, and every
-- number the stage reported (labels are not amounts). What the readers of a run's usage
-- (sql/queries_usage.sql) and the attempts' rollup (roll_up_usage.sql) sum.
--
-- A set-returning SQL function of one SELECT, without SET, so that the planner inlines it
-- into the caller (see finished_job.sql): every name qualified.
CREATE OR REPLACE FUNCTION pipeline.usage_amounts(wall_s real, cpu_s real, usage jsonb)
RETURNS TABLE (counter text, amount double precision)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT 'wall_s'::pg_catalog.text, wall_s::pg_catalog.float8
    WHERE wall_s IS NOT NULL
    UNION ALL
    SELECT 'cpu_s', cpu_s::pg_catalog.float8
    WHERE cpu_s IS NOT NULL
    UNION ALL
    SELECT u.key, u.value::pg_catalog.float8
    FROM pg_catalog.jsonb_each(usage) AS u
    WHERE pg_catalog.jsonb_typeof(u.value) OPERATOR(pg_catalog.=) 'number'
$$;
