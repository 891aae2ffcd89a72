-- Moves a running job's slot with the job when a statement changes its tenant or stage (an
-- operator's UPDATE: no statement of pg-pipeline does), so that the counter of the pair it
-- leaves is not left one too high and the one it joins is not one too low. A job that loses its
-- tenant counts against no one. The trigger jobs_move_slot calls it; it runs after
-- jobs_free_slot (triggers fire in name order), so a statement that also takes the job out of
-- running frees the slot once, there, and moves nothing.
CREATE OR REPLACE FUNCTION pipeline.move_slot() RETURNS trigger
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE pipeline.tenant_slots SET running = greatest(running - 1, 0)
    WHERE tenant_id = OLD.tenant_id AND stage = OLD.type;
    IF NEW.tenant_id IS NULL THEN
        NEW.holds_slot := false;
    ELSE
        INSERT INTO pipeline.tenant_slots AS s (tenant_id, stage, running)
        VALUES (NEW.tenant_id, NEW.type, 1)
        ON CONFLICT (tenant_id, stage) DO UPDATE SET running = s.running + 1;
    END IF;
    RETURN NEW;
END
$$;
