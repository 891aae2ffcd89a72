-- A statement-level trigger, so that every way of inserting jobs (enqueue, bulk, plain SQL)
-- wakes idle workers, once per statement and job type, and only when the insert commits.
CREATE OR REPLACE FUNCTION pipeline_notify_enqueued() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pipeline_jobs', t.type)
    FROM (SELECT DISTINCT type FROM new_jobs WHERE status = 'queued' AND run_after <= now()) AS t;
    RETURN NULL;
END
$$;
