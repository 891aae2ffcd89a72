-- Tenant slot counters that follow every write to jobs, and that do not pile up.
--
-- * A running job's slot moves with it when a statement changes its tenant or stage, and
--   TRUNCATE jobs empties tenant_slots: before, both left the counters as they were (a pair
--   kept a slot no job held, or a job held one no counter showed) until the repair came by.
-- * The repair works in batches of short transactions (sql/functions/pipeline_repair_slots.sql,
--   which takes a batch's start and size now) and removes the rows of idle pairs. Before, one
--   transaction locked every counter it visited until the end of the pass: with 520,000 rows,
--   11 s every 5 minutes in every worker, during which capped claims came back empty and
--   completions of capped jobs waited. And a row was kept for every pair ever seen.

-- Its new arguments are a new function; the file makes it after this migration.
DROP FUNCTION IF EXISTS pipeline_repair_slots();

-- The function: sql/functions/pipeline_move_slot.sql. Named to fire after jobs_free_slot.
CREATE TRIGGER jobs_move_slot
    BEFORE UPDATE OF tenant_id, type ON jobs
    FOR EACH ROW
    WHEN (OLD.holds_slot AND NEW.holds_slot AND NEW.status = 'running'
          AND (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.type IS DISTINCT FROM NEW.type))
    EXECUTE FUNCTION pipeline_move_slot();

-- The function: sql/functions/pipeline_truncate_slots.sql.
CREATE TRIGGER jobs_truncate_slots
    AFTER TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline_truncate_slots();
