-- After TRUNCATE jobs no job holds a slot or waits for one: every counter row is idle, and
-- goes. The trigger jobs_truncate_slots calls it.
CREATE OR REPLACE FUNCTION pipeline_truncate_slots() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM tenant_slots;
    RETURN NULL;
END
$$;
