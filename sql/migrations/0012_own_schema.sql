-- Everything of pg-pipeline moves into a schema of its own (`pipeline`, or PIPELINE_SCHEMA), so
-- that an application's own tables (a `jobs` of its own, say) and its search_path never meet
-- ours; and inside it names lose the prefixes that stood in for a schema: pipeline.jobs,
-- pipeline.outputs (was job_outputs), pipeline.joins (job_joins), pipeline.workers
-- (pipeline_workers), pipeline.schedules (pipeline_schedules), pipeline.tenant_caps,
-- pipeline.tenant_slots, pipeline.claim_group (pipeline_claim_group), the views without
-- `pipeline_` (pipeline.stage_counts, ...), and the functions too (pipeline.claim, ...).
--
-- pipeline/migrate.py runs this with the search_path set to where the objects are: the
-- installation's old schema (public, as a rule), or on a fresh database the schema itself,
-- where each move below changes nothing. It moves the bookkeeping tables before. Rows, running
-- jobs' claims, tenant slots and waiting joins are untouched: tables move with their indexes,
-- constraints, sequences and data; views follow by reference.

-- The functions go, and with them the triggers that run them: their files make them again as
-- pipeline.NAME, with qualified names and a fixed search_path, and the triggers are made again
-- below. Every overload of these names, whatever a package of that time defined.
DROP TRIGGER IF EXISTS jobs_notify_enqueued ON jobs;
DROP TRIGGER IF EXISTS jobs_join_progress ON jobs;
DROP TRIGGER IF EXISTS jobs_add_slots ON jobs;
DROP TRIGGER IF EXISTS jobs_free_slot ON jobs;
DROP TRIGGER IF EXISTS jobs_free_slot_on_delete ON jobs;
DROP TRIGGER IF EXISTS jobs_move_slot ON jobs;
DROP TRIGGER IF EXISTS jobs_truncate_slots ON jobs;
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN
        SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.pronamespace = current_schema()::regnamespace
          AND p.proname IN ('pipeline_claim', 'pipeline_claim_groups', 'pipeline_claim_pick',
                            'pipeline_lock_slots', 'pipeline_take_slots', 'pipeline_add_slots',
                            'pipeline_free_slot', 'pipeline_join_progress',
                            'pipeline_move_slot', 'pipeline_notify_enqueued',
                            'pipeline_repair_slots', 'pipeline_truncate_slots')
    LOOP
        EXECUTE format('DROP FUNCTION %s', f);
    END LOOP;
END
$$;

-- Each table, type and view into the schema, under its new name.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT * FROM (VALUES
            ('TABLE', 'jobs', 'jobs'), ('TABLE', 'job_outputs', 'outputs'),
            ('TABLE', 'job_joins', 'joins'), ('TABLE', 'pipeline_workers', 'workers'),
            ('TABLE', 'tenant_caps', 'tenant_caps'), ('TABLE', 'tenant_slots', 'tenant_slots'),
            ('TABLE', 'pipeline_schedules', 'schedules'),
            ('TYPE', 'pipeline_claim_group', 'claim_group'),
            ('VIEW', 'pipeline_oldest_ready', 'oldest_ready'),
            ('VIEW', 'pipeline_failures_hourly', 'failures_hourly'),
            ('VIEW', 'pipeline_expired_leases', 'expired_leases'),
            ('VIEW', 'pipeline_attempts', 'attempts'),
            ('VIEW', 'pipeline_durations', 'durations'),
            ('VIEW', 'pipeline_stage_counts', 'stage_counts'),
            ('VIEW', 'pipeline_tenant_load', 'tenant_load'),
            ('VIEW', 'pipeline_live_workers', 'live_workers'),
            ('VIEW', 'pipeline_schedule_next', 'schedule_next')
        ) AS t(kind, old, new)
    LOOP
        EXECUTE format('ALTER %s %I SET SCHEMA pipeline', r.kind, r.old);
        IF r.new <> r.old THEN
            EXECUTE format('ALTER %s pipeline.%I RENAME TO %I', r.kind, r.old, r.new);
        END IF;
    END LOOP;
END
$$;
ALTER INDEX pipeline.job_outputs_part RENAME TO outputs_part;
ALTER INDEX pipeline.job_outputs_run RENAME TO outputs_run;
ALTER INDEX pipeline.pipeline_schedules_due RENAME TO schedules_due;
-- A renamed table's constraints keep the old name in theirs (its primary key, its checks, and
-- from PostgreSQL 18 its NOT NULLs): named as a table of the new name would name them.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT c.conrelid::regclass AS tab, c.conname,
               t.new || substr(c.conname, length(t.old) + 1) AS to_name
        FROM (VALUES (to_regclass('pipeline.outputs'), 'job_outputs_', 'outputs_'),
                     (to_regclass('pipeline.joins'), 'job_joins_', 'joins_'),
                     (to_regclass('pipeline.workers'), 'pipeline_workers_', 'workers_'),
                     (to_regclass('pipeline.schedules'), 'pipeline_schedules_', 'schedules_'))
             AS t(tab, old, new)
        JOIN pg_constraint c ON c.conrelid = t.tab AND left(c.conname, length(t.old)) = t.old
    LOOP
        EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', r.tab, r.conname, r.to_name);
    END LOOP;
END
$$;

-- The triggers again, on the functions' new names (migrate() has made the trigger functions
-- before this migration). Their definitions as in 0001, 0002, 0004 and 0010.
CREATE TRIGGER jobs_notify_enqueued
    AFTER INSERT ON pipeline.jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline.notify_enqueued();
CREATE TRIGGER jobs_join_progress
    AFTER UPDATE OF status ON pipeline.jobs
    FOR EACH ROW
    WHEN (NEW.join_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION pipeline.join_progress();
CREATE TRIGGER jobs_add_slots
    AFTER INSERT ON pipeline.jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline.add_slots();
CREATE TRIGGER jobs_free_slot
    BEFORE UPDATE OF status ON pipeline.jobs
    FOR EACH ROW
    WHEN (OLD.holds_slot AND NEW.status IS DISTINCT FROM 'running')
    EXECUTE FUNCTION pipeline.free_slot();
CREATE TRIGGER jobs_free_slot_on_delete
    BEFORE DELETE ON pipeline.jobs
    FOR EACH ROW
    WHEN (OLD.holds_slot)
    EXECUTE FUNCTION pipeline.free_slot();
CREATE TRIGGER jobs_move_slot
    BEFORE UPDATE OF tenant_id, type ON pipeline.jobs
    FOR EACH ROW
    WHEN (OLD.holds_slot AND NEW.holds_slot AND NEW.status = 'running'
          AND (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.type IS DISTINCT FROM NEW.type))
    EXECUTE FUNCTION pipeline.move_slot();
CREATE TRIGGER jobs_truncate_slots
    AFTER TRUNCATE ON pipeline.jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline.truncate_slots();
