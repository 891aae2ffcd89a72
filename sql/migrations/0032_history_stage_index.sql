-- A jobs list filtered by a stage reads the history's (type, id) index back (sql/queries_admin.sql,
-- jobs_list): a page's rows whatever the other stages ran. It walked the id index back through
-- the days that may hold the stage, past every newer job of another stage: at 100 M finished
-- jobs, `/jobs?stage=extract` took 57 ms after a load and 397-413 ms once 2.3 M newer jobs of
-- another stage had finished the same day. The finishing statements write an entry here per job
-- (what 0026 saved with the (type, finished_at) index): 500,000 rows into an empty day took
-- 2.46-2.72 s with it, 1.69-1.96 s without (1.5 us a row), and a drain's Postgres CPU was 0.0328
-- ms a job with it, 0.0304 without (medians of 7 alternated runs, spread 0.021-0.039).
-- On the partitioned parent: every day gets it, built day by day.
CREATE INDEX IF NOT EXISTS job_history_stage ON pipeline.job_history (type, id);
-- The days' own named after it, as make_history_partitions names a new day's (plans say which).
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT i.inhrelid::regclass::text AS child, t.relname AS part
        FROM pg_inherits i
        JOIN pg_index x ON x.indexrelid = i.inhrelid
        JOIN pg_class t ON t.oid = x.indrelid
        WHERE i.inhparent = 'pipeline.job_history_stage'::regclass
    LOOP
        EXECUTE format('ALTER INDEX %s RENAME TO %I', r.child, r.part || '_stage');
    END LOOP;
END
$$;
