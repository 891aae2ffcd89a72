-- pipeline.finished_job and pipeline.ended_attempt return a set now (sql/functions), so that
-- the planner inlines each once per statement instead of once per column: CREATE OR REPLACE
-- cannot change a result type, so the old ones go and their files make the new ones. IF
-- EXISTS: a database made from scratch runs this before any function file.
DROP FUNCTION IF EXISTS pipeline.finished_job(pipeline.active_jobs, text, text, boolean, boolean);
DROP FUNCTION IF EXISTS pipeline.ended_attempt(pipeline.active_jobs, text, text, double precision,
                                               text, integer);
