-- Recounts each pair from the jobs table under its row lock; returns the pairs it corrected.
-- A pair locked right now (a claim or a completion is changing it) is left for the next pass:
-- waiting for it while holding the pairs already counted could deadlock with a completion
-- that frees slots of several tenants in another order.
CREATE OR REPLACE FUNCTION pipeline_repair_slots()
RETURNS TABLE (tenant_id text, stage text, was integer, counted integer)
LANGUAGE plpgsql AS $$
DECLARE
    pair record;
BEGIN
    FOR pair IN SELECT s.tenant_id, s.stage FROM tenant_slots s LOOP
        SELECT s.running INTO was FROM tenant_slots s
        WHERE s.tenant_id = pair.tenant_id AND s.stage = pair.stage
        FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        -- A statement of its own, so its snapshot is taken after the lock: claims that
        -- committed while we waited are counted.
        SELECT count(*) INTO counted FROM jobs j
        WHERE j.status = 'running' AND j.holds_slot
          AND j.tenant_id = pair.tenant_id AND j.type = pair.stage;
        IF was IS DISTINCT FROM counted THEN
            UPDATE tenant_slots s SET running = counted
            WHERE s.tenant_id = pair.tenant_id AND s.stage = pair.stage;
            tenant_id := pair.tenant_id;
            stage := pair.stage;
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;
