-- A statement-level trigger, so that every way of inserting jobs (enqueue, bulk, plain SQL)
-- wakes idle workers, once per statement and job type, and only when the insert commits.
CREATE OR REPLACE FUNCTION pipeline.notify_enqueued() RETURNS trigger
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
-- Its statements planned once per connection (see count_runs.sql).
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    PERFORM pg_notify('pipeline_jobs', t.type)
    FROM (SELECT DISTINCT type FROM new_jobs WHERE status = 'queued' AND run_after <= now()) AS t;
    RETURN NULL;
END
$$;
