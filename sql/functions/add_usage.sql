-- Add amounts to pipeline.usage_by_day, in the calling transaction's shard (rollup_shard.sql):
-- one row per (day, tenant, stage, counter) of the arrays, which the caller summed already
-- (roll_up_usage.sql). Upserted in key order.
CREATE OR REPLACE FUNCTION pipeline.add_usage(
    p_days date[], p_tenants text[], p_stages text[], p_counters text[],
    p_amounts double precision[], p_attempts bigint[]
) RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO pipeline.usage_by_day AS r
        (day, tenant_id, stage, counter, shard, amount, attempts)
    SELECT u.day, u.tenant_id, u.stage, u.counter, pipeline.rollup_shard(), u.amount,
           u.attempts
    FROM unnest(p_days, p_tenants, p_stages, p_counters, p_amounts, p_attempts)
         AS u(day, tenant_id, stage, counter, amount, attempts)
    ORDER BY u.tenant_id, u.counter, u.day, u.stage
    ON CONFLICT (tenant_id, counter, day, stage, shard) DO UPDATE
    SET amount = r.amount + excluded.amount,
        attempts = r.attempts + excluded.attempts
$$;
