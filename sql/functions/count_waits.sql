-- A run's waiting jobs (pipeline.runs.waiting), kept by the statements that move a job into
-- 'waiting' or out of it (the triggers active_jobs_count_waits and
-- active_jobs_count_waits_deleted, row by row: waits are few, and the triggers' WHEN passes
-- every other change by without a call). A waiting job deleted from pipeline.active_jobs (a
-- cancel, or anyone's DELETE) also resolves its open wait as cancelled, so that no wait stays
-- open for a job that can no longer be resumed. `active` is left to count_runs: a waiting job
-- is active there like a queued one.
CREATE OR REPLACE FUNCTION pipeline.count_waits() RETURNS trigger
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    delta integer;
    job_id bigint;
    run bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        delta := -1;
        job_id := OLD.id;
        run := coalesce(OLD.root_id, OLD.id);
        UPDATE pipeline.waits AS w
        SET resolved_at = now(), resolution = 'cancelled'
        WHERE w.job_id = OLD.id AND w.resolved_at IS NULL;
    ELSE
        delta := CASE WHEN NEW.status = 'waiting' THEN 1 ELSE -1 END;
        job_id := NEW.id;
        run := coalesce(NEW.root_id, NEW.id);
    END IF;
    UPDATE pipeline.runs AS r
    SET waiting = r.waiting + delta,
        status = pipeline.run_status(r.active, r.failed, r.cancelled, r.waiting + delta)
    WHERE r.run_id = run;
    RETURN NULL;
END
$$;
