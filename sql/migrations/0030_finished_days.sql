-- The days each stage finished jobs in, by outcome, for the minutes the rollups no longer hold:
-- what lets a jobs list filtered by a stage or an outcome read only the history's days that may
-- hold one (sql/functions/finished_span.sql). A list by a stage no job has walked every day's
-- id index back to the first job (0.5-0.8 s at 10 M finished jobs); an index of the history by
-- (type, id) would cost every finished job an entry. The Partitions service folds the minutes
-- it drops into their days (sql/queries_admin.sql, rollups_drop_old); nothing else writes here.
-- Counted here from the history once, as it is: its minutes older than two days are gone.
CREATE TABLE pipeline.finished_days (
    stage  text        NOT NULL,
    status text        NOT NULL,
    -- The UTC midnight the day begins at: its partition's lower bound.
    day    timestamptz NOT NULL,
    CONSTRAINT finished_days_pkey PRIMARY KEY (stage, status, day)
);
INSERT INTO pipeline.finished_days (stage, status, day)
SELECT DISTINCT type, status, date_bin('1 day', finished_at, timestamptz '2000-01-01 00:00+00')
FROM pipeline.job_history;
