-- Gives back the tenant slots of the running jobs a DELETE took out of pipeline.active_jobs, once
-- per statement: a finished job moves into the history by a DELETE (every completion, failure
-- and cancel), so a batch of completions frees its slots with one row of pipeline.freed_slots
-- per (tenant, stage) it touched, not a write per job. Only rows that statement really deleted
-- are in gone_jobs, so nothing can free a slot twice or forget it (a hand-written DELETE
-- included). An insert waits for no lock: a completion never queues behind a claim holding the
-- pair's counter. The trigger jobs_free_deleted_slots calls it.
CREATE OR REPLACE FUNCTION pipeline.free_deleted_slots() RETURNS trigger
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
-- Its statements planned once per connection (see count_runs.sql).
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    INSERT INTO pipeline.freed_slots (tenant_id, stage, n)
    SELECT g.tenant_id, g.type, count(*)::integer
    FROM gone_jobs g
    WHERE g.holds_slot
    GROUP BY 1, 2;
    RETURN NULL;
END
$$;
