-- Moves a running job's slot with the job when a statement changes its tenant or stage (an
-- operator's UPDATE: no statement of pg-pipeline does), so that the counter of the pair it
-- leaves is not left one too high and the one it joins is not one too low. A job that loses its
-- tenant counts against no one. The trigger jobs_move_slot calls it; it runs after
-- jobs_free_slot (triggers fire in name order), so a statement that also takes the job out of
-- running frees the slot once, there, and moves nothing. The slot it leaves is given back as
-- any other (pipeline.freed_slots); the one it takes is counted at once, under the counter's
-- lock, so that no claim can see the pair with room the job already uses.
CREATE OR REPLACE FUNCTION pipeline.move_slot() RETURNS trigger
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO pipeline.freed_slots (tenant_id, stage, n) VALUES (OLD.tenant_id, OLD.type, 1);
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
