-- A prune batch reads only the days of the history that can hold its runs (issue 21, item 5):
-- pipeline.run_members takes the range of days it may leave out (skip_from, skip_to), an
-- argument list CREATE OR REPLACE cannot change, so it goes and is made again from its file
-- (sql/functions/run_members.sql); pipeline.history_day_bounds, which a pass reads those days
-- by, is new (sql/functions/history_day_bounds.sql).
DROP FUNCTION IF EXISTS pipeline.run_members(bigint[], timestamptz, boolean);
