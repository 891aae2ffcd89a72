-- Counting in a trigger makes every way a child can finish (completion, failure, reclaim on
-- the final attempt, cancel) count, in the same transaction as that status change. The
-- UPDATE of the join row serialises concurrent finishers, so exactly one of them sees the
-- last child finish and enqueues the next stage.
CREATE OR REPLACE FUNCTION pipeline.join_progress() RETURNS trigger
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j pipeline.joins%ROWTYPE;
    next_id bigint;
BEGIN
    IF NEW.status IN ('done', 'failed', 'cancelled') THEN
        UPDATE pipeline.joins
        SET done = done + (NEW.status = 'done')::int,
            failed = failed + (NEW.status <> 'done')::int
        WHERE id = NEW.join_id
        RETURNING * INTO j;
    ELSIF OLD.status IN ('done', 'failed', 'cancelled') THEN
        -- A finished child went back to the queue (jobs retry): it is not finished any more.
        UPDATE pipeline.joins
        SET done = done - (OLD.status = 'done')::int,
            failed = failed - (OLD.status <> 'done')::int,
            finished_at = NULL
        WHERE id = NEW.join_id;
        RETURN NULL;
    ELSE
        RETURN NULL;
    END IF;
    IF j.id IS NULL OR j.done + j.failed < j.total THEN
        RETURN NULL;
    END IF;
    IF j.failed = 0 AND j.then_type IS NOT NULL AND j.then_job_id IS NULL THEN
        INSERT INTO pipeline.jobs (type, tenant_id, payload, priority, max_attempts, lease_seconds,
                          parent_id, root_id)
        VALUES (j.then_type, j.then_tenant_id, j.then_payload, j.then_priority,
                j.then_max_attempts, j.then_lease_seconds, j.id, j.root_id)
        RETURNING id INTO next_id;
    END IF;
    UPDATE pipeline.joins SET then_job_id = coalesce(then_job_id, next_id), finished_at = now()
    WHERE id = j.id;
    RETURN NULL;
END
$$;
