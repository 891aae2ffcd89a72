-- How much of `p_counter` tenant `p_tenant` used in stage `p_stage` (NULL: all stages) since
-- the UTC day of `p_since`, from the usage rollup (pipeline.usage_by_day); 0 when none.
-- p_counter 'cost' is money: every priced counter (pipeline.prices) times its price. Budgets
-- call it in the claim for tenants that have one, so it reads one range of the rollup's key
-- (tenant, counter, day) per counter: a few rows a day (stages x shards), whatever the
-- history holds. Whole days: the rollup keeps no finer time, so a p_since inside a day counts
-- that day from its start.
CREATE OR REPLACE FUNCTION pipeline.tenant_usage(
    p_tenant text, p_stage text, p_counter text, p_since timestamptz
) RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(sum(u.amount * c.price), 0)::double precision
    FROM (SELECT p_counter AS counter, 1::double precision AS price
          WHERE p_counter <> 'cost'
          UNION ALL
          SELECT p.counter, p.price FROM pipeline.prices AS p WHERE p_counter = 'cost') AS c
    JOIN pipeline.usage_by_day AS u
      ON u.tenant_id = p_tenant AND u.counter = c.counter
     AND u.day >= (p_since AT TIME ZONE 'UTC')::date
     AND (p_stage IS NULL OR u.stage = p_stage)
$$;
