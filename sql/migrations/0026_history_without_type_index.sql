-- The history's (type, finished_at) index goes: every finishing statement wrote an entry in it
-- and nothing read it. It served the status views' windows of finished jobs per stage, which
-- read the rollups (pipeline.finished_by_minute) since 0016; a jobs list filtered by stage
-- walks the primary key back (sql/queries_admin.sql, jobs_list), and a window of finish times
-- reads its days alone (partition pruning). Dropped on the partitioned parent, it goes from
-- every day with it.
DROP INDEX IF EXISTS pipeline.job_history_type;
