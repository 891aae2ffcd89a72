-- A pair's counter row exists before its first claim, made by the statement that enqueued its
-- first job (or its first since the slot repair removed the row of the idle pair): were the
-- claim to insert it, two claimers inserting two new tenants' rows in opposite orders would
-- wait on each other.
CREATE OR REPLACE FUNCTION pipeline.add_slots() RETURNS trigger
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
-- Its statements planned once per connection (see count_runs.sql).
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    INSERT INTO pipeline.tenant_slots (tenant_id, stage)
    SELECT DISTINCT n.tenant_id, n.type FROM new_jobs n
    WHERE n.tenant_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM pipeline.tenant_slots s
                      WHERE s.tenant_id = n.tenant_id AND s.stage = n.type)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
