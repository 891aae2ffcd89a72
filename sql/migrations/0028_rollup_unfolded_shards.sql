-- The rollups' rows that the Partitions service folds (sql/queries_admin.sql,
-- rollups_fold_shards: shards other than 0, of minutes over an hour old), found by minute. The
-- fold read every row of the two days the rollups keep, folded or not, to find the few it
-- folds: at a million finished jobs a day, 120,000 buffers and half a second of Postgres CPU in
-- every worker at its start (and hourly), beside the jobs it starts to run. Partial: the rows
-- of shard 0, all the folded ones, are not in them, so the fold reads the rows it folds. A
-- completion's update of its minute's row changes neither column, so it stays HOT.
CREATE INDEX finished_by_minute_unfolded ON pipeline.finished_by_minute (minute)
    WHERE shard <> 0;
CREATE INDEX tenant_finished_by_minute_unfolded ON pipeline.tenant_finished_by_minute (minute)
    WHERE shard <> 0;
