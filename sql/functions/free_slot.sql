-- Gives a tenant's slot back in the very statement that moves its job out of running, for
-- whatever reason (complete, fail, retry, release, reclaim, cancel, timeout, a hand-written
-- UPDATE or DELETE), and only for rows that statement really changed: nothing can free a slot
-- twice or forget it. The triggers jobs_free_slot and jobs_free_slot_on_delete call it.
CREATE OR REPLACE FUNCTION pipeline.free_slot() RETURNS trigger
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Never below zero: a drift is the repair's to report, never a reason to refuse a write.
    UPDATE pipeline.tenant_slots SET running = greatest(running - 1, 0)
    WHERE tenant_id = OLD.tenant_id AND stage = OLD.type;
    IF TG_OP = 'UPDATE' THEN
        NEW.holds_slot := false;
        RETURN NEW;
    END IF;
    RETURN OLD;
END
$$;
