-- Counting in a trigger makes every way a child can finish count, in the same transaction as
-- its move: a job finishes by moving from pipeline.active_jobs into pipeline.job_history
-- (completion, failure, reclaim on the final attempt, cancel), so an insert into the history
-- is a child finished, and a delete from it (or from pipeline.job_history_kept) that a retry
-- makes is a child that is not finished any more. The UPDATE of the join row serialises
-- concurrent finishers, so exactly one of them sees the last child finish and enqueues the next
-- stage. A prune that deletes a run deletes its join rows with it: what it un-counts here is
-- gone by then, or goes in the same statement.
CREATE OR REPLACE FUNCTION pipeline.join_progress() RETURNS trigger
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j pipeline.joins%ROWTYPE;
    next_id bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE pipeline.joins
        SET done = done - (OLD.status = 'done')::int,
            failed = failed - (OLD.status <> 'done')::int,
            finished_at = NULL
        WHERE id = OLD.join_id;
        RETURN NULL;
    END IF;
    UPDATE pipeline.joins
    SET done = done + (NEW.status = 'done')::int,
        failed = failed + (NEW.status <> 'done')::int
    WHERE id = NEW.join_id
    RETURNING * INTO j;
    IF j.id IS NULL OR j.done + j.failed < j.total THEN
        RETURN NULL;
    END IF;
    IF j.failed = 0 AND j.then_type IS NOT NULL AND j.then_job_id IS NULL THEN
        INSERT INTO pipeline.active_jobs (type, tenant_id, payload, priority, max_attempts,
                                          lease_seconds, parent_id, root_id, traceparent, limits)
        VALUES (j.then_type, j.then_tenant_id, j.then_payload, j.then_priority,
                j.then_max_attempts, j.then_lease_seconds, j.id, j.root_id, j.then_traceparent,
                j.then_limits)
        RETURNING id INTO next_id;
    END IF;
    UPDATE pipeline.joins SET then_job_id = coalesce(then_job_id, next_id), finished_at = now()
    WHERE id = j.id;
    RETURN NULL;
END
$$;
