-- The claim takes a capped pair's room from its counter when it locks it
-- (sql/functions/lock_slots.sql) and gives back what it did not take
-- (sql/functions/give_back_slots.sql), instead of raising the counter again by what it took.
DROP FUNCTION IF EXISTS pipeline.take_slots(pipeline.claim_group[], integer[]);
