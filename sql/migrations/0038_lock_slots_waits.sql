-- A claim's first pass waits for a tenant's counter that another claim holds while it commits,
-- rather than skip the pair (sql/functions/lock_slots.sql says why): pipeline.lock_slots takes
-- whether to wait, an argument CREATE OR REPLACE cannot add, so it goes and is made again from
-- its file.
DROP FUNCTION IF EXISTS pipeline.lock_slots(pipeline.claim_group[], integer[]);
