-- Flat at scale (issue 21, move 5): the figures of finished jobs that `pipeline status`, the
-- dashboard's overview and the metrics show (completed, failed, attempts and run times over
-- the last hour and day, per stage and per tenant) come from per-minute rollups, which the
-- statement that moves jobs into the history (or out of it) keeps, instead of from a day's
-- rows of the history: a million finished jobs a day made `pipeline status` take 2.3 s.
-- The views keep their names and columns; durations' percentiles become estimates from a
-- histogram (within 13%). The rollups of the last two days are counted here from the history.

-- Finished jobs counted per minute, stage and outcome (done, failed, cancelled), written by the
-- statement that moves jobs into the history or out of it (sql/functions/roll_up_finished.sql):
-- the status views, `pipeline status`, the dashboard's overview and the metrics read a day of
-- these instead of a day of the history, so they cost the same at a thousand finished jobs a
-- day or a million. Each backend adds to a shard of its own (0..7) so that concurrent
-- finishers never wait on each other's row; a reader sums the shards. Kept ROLLUP_KEEP (two
-- days, pipeline/history.py): the views read the last 24 hours. A low fillfactor: the current
-- minute's rows are updated by every completion, and updates that stay on their page (HOT)
-- leave the primary key alone.
CREATE TABLE pipeline.finished_by_minute (
    minute       timestamptz      NOT NULL,
    stage        text             NOT NULL,
    status       text             NOT NULL,
    shard        smallint         NOT NULL,
    jobs         bigint           NOT NULL,
    attempts     bigint           NOT NULL,  -- charged attempts, summed
    max_attempts integer,
    timed        bigint           NOT NULL,  -- done jobs with a start time: the histogram's
    min_run_s    double precision,
    max_run_s    double precision,
    -- run times of the timed jobs: sql/functions/run_time_histogram_add.sql
    run_hist     integer[],
    CONSTRAINT finished_by_minute_pkey PRIMARY KEY (minute, stage, status, shard)
) WITH (fillfactor = 70);

-- The same, per tenant (untenanted jobs are in finished_by_minute alone): what a status read
-- scoped to one tenant sums, through its primary key, whatever the other tenants finish.
CREATE TABLE pipeline.tenant_finished_by_minute (
    tenant_id    text             NOT NULL,
    minute       timestamptz      NOT NULL,
    stage        text             NOT NULL,
    status       text             NOT NULL,
    shard        smallint         NOT NULL,
    jobs         bigint           NOT NULL,
    attempts     bigint           NOT NULL,
    max_attempts integer,
    timed        bigint           NOT NULL,
    min_run_s    double precision,
    max_run_s    double precision,
    run_hist     integer[],
    CONSTRAINT tenant_finished_by_minute_pkey
        PRIMARY KEY (tenant_id, minute, stage, status, shard)
) WITH (fillfactor = 70);
-- Retention deletes old minutes of every tenant.
CREATE INDEX tenant_finished_by_minute_minute ON pipeline.tenant_finished_by_minute (minute);

-- A run-time histogram of jobs (sql/functions/run_time_histogram_add.sql), and the sum of
-- several.
CREATE AGGREGATE pipeline.run_time_histogram(double precision, integer) (
    SFUNC = pipeline.run_time_histogram_add,
    STYPE = integer[]
);
CREATE AGGREGATE pipeline.histogram_sum(integer[]) (
    SFUNC = pipeline.histogram_add,
    STYPE = integer[]
);

-- The rollups follow the history's rows in and out (sql/functions/roll_up_finished.sql). On the
-- partitioned parent: every finishing write, retry and prune names it. Rows that retention
-- copies into job_history_kept were counted already; deleting them there counts them out.
CREATE TRIGGER job_history_roll_up_finished
    AFTER INSERT ON pipeline.job_history
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT
    EXECUTE FUNCTION pipeline.roll_up_finished();
CREATE TRIGGER job_history_roll_up_removed
    AFTER DELETE ON pipeline.job_history
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT
    EXECUTE FUNCTION pipeline.roll_up_finished();
CREATE TRIGGER job_history_kept_roll_up_removed
    AFTER DELETE ON pipeline.job_history_kept
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT
    EXECUTE FUNCTION pipeline.roll_up_finished();

-- What the history holds of the last two days, counted once (shard 0); finishes from now on
-- are counted by the triggers above, in this transaction's wake.
WITH h AS (
    SELECT date_trunc('minute', finished_at) AS minute, type AS stage, tenant_id, status,
           attempts,
           CASE WHEN status = 'done' AND started_at IS NOT NULL
                THEN greatest(extract(epoch FROM finished_at - started_at), 0)::double precision
           END AS run_s
    FROM (SELECT type, tenant_id, status, attempts, started_at, finished_at
          FROM pipeline.job_history
          UNION ALL
          SELECT type, tenant_id, status, attempts, started_at, finished_at
          FROM pipeline.job_history_kept) AS j
    WHERE finished_at >= now() - interval '2 days'
),
whole AS (
    INSERT INTO pipeline.finished_by_minute
        (minute, stage, status, shard, jobs, attempts, max_attempts, timed, min_run_s, max_run_s,
         run_hist)
    SELECT minute, stage, status, 0, count(*), sum(attempts), max(attempts), count(run_s),
           min(run_s), max(run_s), pipeline.run_time_histogram(run_s, 1)
    FROM h
    GROUP BY minute, stage, status
)
INSERT INTO pipeline.tenant_finished_by_minute
    (tenant_id, minute, stage, status, shard, jobs, attempts, max_attempts, timed, min_run_s,
     max_run_s, run_hist)
SELECT tenant_id, minute, stage, status, 0, count(*), sum(attempts), max(attempts), count(run_s),
       min(run_s), max(run_s), pipeline.run_time_histogram(run_s, 1)
FROM h
WHERE tenant_id IS NOT NULL
GROUP BY tenant_id, minute, stage, status;

-- The views over finished jobs read the rollups: a day is 1,440 minutes of a few rows each
-- (per stage, outcome and shard), however many jobs finished in it. "The last hour" is the
-- current minute and the 59 before it, "the last 24 hours" the current minute and the 1,439
-- before it: windows of whole minutes, which may take in up to a minute more than now() - 1
-- hour would. durations' p50 and p95 are estimates from the histograms (within 13%).
CREATE OR REPLACE VIEW pipeline.failures_hourly AS
SELECT stage, date_trunc('hour', minute) AS hour, sum(jobs)::bigint AS failed
FROM pipeline.finished_by_minute
WHERE status = 'failed'
  AND minute >= date_trunc('hour', now()) - interval '23 hours'
GROUP BY stage, date_trunc('hour', minute)
HAVING sum(jobs) > 0;

CREATE OR REPLACE VIEW pipeline.attempts AS
SELECT r.stage,
       coalesce(sum(r.jobs) FILTER (WHERE r.last_hour), 0)::bigint AS completed_1h,
       (sum(r.attempts) FILTER (WHERE r.last_hour)
        / nullif(sum(r.jobs) FILTER (WHERE r.last_hour), 0))::double precision AS avg_attempts_1h,
       max(r.max_attempts) FILTER (WHERE r.last_hour) AS max_attempts_1h,
       sum(r.jobs)::bigint AS completed_24h,
       (sum(r.attempts) / nullif(sum(r.jobs), 0))::double precision AS avg_attempts_24h,
       max(r.max_attempts) AS max_attempts_24h
FROM (
    SELECT stage, jobs, attempts, max_attempts,
           minute >= date_trunc('minute', now()) - interval '59 minutes' AS last_hour
    FROM pipeline.finished_by_minute
    WHERE status = 'done' AND minute >= date_trunc('minute', now()) - interval '1439 minutes'
) AS r
GROUP BY r.stage
HAVING sum(r.jobs) > 0;

CREATE OR REPLACE VIEW pipeline.durations AS
SELECT stage,
       sum(timed)::bigint AS completed,
       pipeline.histogram_quantile(pipeline.histogram_sum(run_hist), 0.5, min(min_run_s),
                                    max(max_run_s))
           AS p50_s,
       pipeline.histogram_quantile(pipeline.histogram_sum(run_hist), 0.95, min(min_run_s),
                                    max(max_run_s))
           AS p95_s,
       max(max_run_s) AS max_s
FROM pipeline.finished_by_minute
WHERE status = 'done' AND minute >= date_trunc('minute', now()) - interval '59 minutes'
  AND timed <> 0
GROUP BY stage
HAVING sum(timed) > 0;

CREATE OR REPLACE VIEW pipeline.stage_counts AS
SELECT p.stage,
       sum(p.queued)::bigint AS queued,
       sum(p.running)::bigint AS running,
       sum(p.failed_1h)::bigint AS failed_1h,
       sum(p.failed_24h)::bigint AS failed_24h
FROM (
    SELECT type AS stage, count(*) AS queued, 0 AS running, 0 AS failed_1h, 0 AS failed_24h
    FROM pipeline.active_jobs WHERE status = 'queued' AND tenant_id IS NOT NULL GROUP BY type
    UNION ALL
    SELECT type, count(*), 0, 0, 0
    FROM pipeline.active_jobs WHERE status = 'queued' AND tenant_id IS NULL GROUP BY type
    UNION ALL
    SELECT type, 0, count(*), 0, 0
    FROM pipeline.active_jobs WHERE status = 'running' GROUP BY type
    UNION ALL
    SELECT stage, 0, 0,
           coalesce(sum(jobs) FILTER (
               WHERE minute >= date_trunc('minute', now()) - interval '59 minutes'), 0)::bigint,
           sum(jobs)::bigint
    FROM pipeline.finished_by_minute
    WHERE status = 'failed' AND minute >= date_trunc('minute', now()) - interval '1439 minutes'
    GROUP BY stage
    HAVING sum(jobs) > 0
) AS p
GROUP BY p.stage;
