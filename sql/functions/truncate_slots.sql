-- After TRUNCATE pipeline.active_jobs no job holds a slot or waits for one: every counter row is
-- idle, and goes, with the slots given back that no claim has subtracted yet. The trigger
-- jobs_truncate_slots calls it.
CREATE OR REPLACE FUNCTION pipeline.truncate_slots() RETURNS trigger
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
-- Its statements planned once per connection (see count_runs.sql).
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    DELETE FROM pipeline.tenant_slots;
    DELETE FROM pipeline.freed_slots;
    RETURN NULL;
END
$$;
