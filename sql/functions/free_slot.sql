-- Gives a tenant's slot back in the very statement that moves its job out of running by an
-- UPDATE (retry, release, reclaim, unclaim, a hand-written UPDATE), and only for rows that
-- statement really changed: nothing can free a slot twice or forget it. The trigger
-- jobs_free_slot calls it, once per such row, and it clears the row's holds_slot. The slot goes
-- into pipeline.freed_slots, which waits for no lock; the pair's next claim subtracts it. A job
-- that leaves by a DELETE (it finished: the drain's path) frees its slot once per statement
-- instead (free_deleted_slots.sql).
CREATE OR REPLACE FUNCTION pipeline.free_slot() RETURNS trigger
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO pipeline.freed_slots (tenant_id, stage, n) VALUES (OLD.tenant_id, OLD.type, 1);
    NEW.holds_slot := false;
    RETURN NEW;
END
$$;
