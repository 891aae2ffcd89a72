-- Hot and history apart (issue 21, move 2). Queued and running jobs stay in a table of their own,
-- pipeline.active_jobs (today's pipeline.jobs, renamed), which the claim, heartbeats and
-- completions work on; a job that finishes moves, in the statement that finishes it, into
-- pipeline.job_history, partitioned by finish time, one partition per UTC day, which retention
-- drops a day at a time. pipeline.jobs becomes a view over both (and the kept rows of runs
-- that outlive their day), for every reader. Dedup keys move to a table of their own, since a
-- unique index can no longer span every job.
--
-- An installation's finished rows move into the history in this migration: one partition,
-- job_history_legacy, for the days before today (thousands of daily partitions would cost more
-- to plan than they save), which retention prunes run by run until the whole of it is past the
-- cutoff, then drops; today's and later rows go to their days' partitions, which
-- pipeline.make_history_partitions makes (migrate() makes it before the migrations). Running
-- jobs, their claims and slots, and waiting joins are untouched.

ALTER TABLE pipeline.jobs RENAME TO active_jobs;
ALTER SEQUENCE pipeline.jobs_id_seq RENAME TO active_jobs_id_seq;
-- Its constraints named as a table of the new name would name them (as in 0012): its primary
-- key, its checks, and from PostgreSQL 18 its NOT NULLs.
DO $$
DECLARE
    c text;
BEGIN
    FOR c IN
        SELECT conname FROM pg_constraint
        WHERE conrelid = 'pipeline.active_jobs'::regclass AND conname LIKE 'jobs\_%'
    LOOP
        EXECUTE format('ALTER TABLE pipeline.active_jobs RENAME CONSTRAINT %I TO %I',
                       c, 'active_' || c);
    END LOOP;
END
$$;
-- The join is counted when a child moves (a trigger on the history, below).
DROP TRIGGER jobs_join_progress ON pipeline.active_jobs;

-- Finished jobs (done, failed, cancelled), moved here from pipeline.active_jobs by the statement
-- that finishes each one, which deletes it there and inserts it here (sql/queries.py's fenced
-- writes). Partitioned by finish time, one partition per UTC day (job_history_YYYYMMDD, made
-- ahead by pipeline.make_history_partitions): retention detaches and drops a day at once
-- instead of deleting its rows one by one, and a read of a time window reads its days alone.
-- No default partition: see sql/functions/make_history_partitions.sql. The same columns as
-- pipeline.active_jobs, in the same order, with the same defaults.
CREATE TABLE pipeline.job_history (
    -- From the hot table's sequence, so that a row loaded here directly (a bulk load of old
    -- jobs, a test) never takes an id a job has.
    id            bigint      NOT NULL DEFAULT nextval('pipeline.active_jobs_id_seq'::regclass),
    type          text        NOT NULL,
    tenant_id     text,
    payload       jsonb       NOT NULL DEFAULT '{}'::jsonb,
    priority      smallint    NOT NULL DEFAULT 0,
    status        text        NOT NULL
                  CONSTRAINT job_history_status_check
                  CHECK (status IN ('done', 'failed', 'cancelled')),
    attempts      integer     NOT NULL DEFAULT 0,
    max_attempts  integer     NOT NULL DEFAULT 5,
    run_after     timestamptz NOT NULL DEFAULT now(),
    leased_until  timestamptz,
    lease_seconds integer     NOT NULL DEFAULT 300,
    worker_id     uuid,
    last_error    text,
    dedup_key     text,
    parent_id     bigint,
    root_id       bigint,
    join_id       bigint,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz NOT NULL,
    claims        integer     NOT NULL DEFAULT 0,
    suspect       boolean     NOT NULL DEFAULT false,
    crash_reclaims integer    NOT NULL DEFAULT 0,
    releases      integer     NOT NULL DEFAULT 0,
    holds_slot    boolean     NOT NULL DEFAULT false
) PARTITION BY RANGE (finished_at);
-- On the parent, so that every partition has them. Not unique: a unique index on a partitioned
-- table must hold the partition key; the id is unique because it comes from active_jobs' identity
-- and a job is in one table at a time.
CREATE INDEX job_history_id ON pipeline.job_history (id);
CREATE INDEX job_history_run ON pipeline.job_history (root_id) WHERE root_id IS NOT NULL;
CREATE INDEX job_history_parent ON pipeline.job_history (parent_id) WHERE parent_id IS NOT NULL;
-- `pipeline jobs` filters (0007's jobs_tenant, jobs_failed and jobs_created, moved here).
CREATE INDEX job_history_tenant ON pipeline.job_history (tenant_id, id) WHERE tenant_id IS NOT NULL;
CREATE INDEX job_history_failed ON pipeline.job_history (id) WHERE status IN ('failed', 'cancelled');
CREATE INDEX job_history_created ON pipeline.job_history USING brin (created_at)
    WITH (pages_per_range = 32);
-- The status views' windows of finished jobs per stage.
CREATE INDEX job_history_type ON pipeline.job_history (type, finished_at);

-- The rows of runs that outlive the partition they finished in: when retention drops a day,
-- a run that is still going (a job of it active, or finished on a later day) or, with
-- --keep-failed, a failed one keeps its jobs of that day here. Small, and deleted run by run.
CREATE TABLE pipeline.job_history_kept (
    id            bigint      NOT NULL CONSTRAINT job_history_kept_pkey PRIMARY KEY,
    type          text        NOT NULL,
    tenant_id     text,
    payload       jsonb       NOT NULL,
    priority      smallint    NOT NULL,
    status        text        NOT NULL
                  CONSTRAINT job_history_kept_status_check
                  CHECK (status IN ('done', 'failed', 'cancelled')),
    attempts      integer     NOT NULL,
    max_attempts  integer     NOT NULL,
    run_after     timestamptz NOT NULL,
    leased_until  timestamptz,
    lease_seconds integer     NOT NULL,
    worker_id     uuid,
    last_error    text,
    dedup_key     text,
    parent_id     bigint,
    root_id       bigint,
    join_id       bigint,
    created_at    timestamptz NOT NULL,
    started_at    timestamptz,
    finished_at   timestamptz NOT NULL,
    claims        integer     NOT NULL,
    suspect       boolean     NOT NULL,
    crash_reclaims integer    NOT NULL,
    releases      integer     NOT NULL,
    holds_slot    boolean     NOT NULL
);
CREATE INDEX job_history_kept_run ON pipeline.job_history_kept (root_id) WHERE root_id IS NOT NULL;

-- Every job, wherever it is, for readers (`pipeline jobs`, runs, the dashboard, the status
-- views, anyone's own SQL). Writes go to the table a job is in. The CHECKs on status let the
-- planner leave out the arms that cannot hold a status asked for (constraint_exclusion
-- 'partition', the default, covers UNION ALL arms), and a finished_at range prunes partitions.
CREATE VIEW pipeline.jobs AS
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
       holds_slot
FROM pipeline.active_jobs
UNION ALL
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
       holds_slot
FROM pipeline.job_history
UNION ALL
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
       holds_slot
FROM pipeline.job_history_kept;

-- "The same dedup key gives back the existing job, finished or not", for as long as the job is
-- kept: queued, running, or in the history until retention deletes its run. The enqueue
-- statement inserts the key first and the job only when the key was new, under the id it took.
CREATE TABLE pipeline.dedup_keys (
    type      text   NOT NULL,
    dedup_key text   NOT NULL,
    job_id    bigint NOT NULL,
    CONSTRAINT dedup_keys_pkey PRIMARY KEY (type, dedup_key)
);
-- Retention deletes a pruned run's keys by job.
CREATE INDEX dedup_keys_job ON pipeline.dedup_keys (job_id);


-- Every key a job holds today, finished or not.
INSERT INTO pipeline.dedup_keys (type, dedup_key, job_id)
SELECT type, dedup_key, id FROM pipeline.active_jobs WHERE dedup_key IS NOT NULL;

-- The days before today in one partition; a finished row without a finish time (none should
-- be) counts as finished when it was made.
DO $$
DECLARE
    today timestamptz := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    first timestamptz;
BEGIN
    SELECT date_trunc('day', min(coalesce(finished_at, created_at)) AT TIME ZONE 'UTC')
           AT TIME ZONE 'UTC'
    INTO first
    FROM pipeline.active_jobs
    WHERE status IN ('done', 'failed', 'cancelled') AND coalesce(finished_at, created_at) < today;
    IF first IS NOT NULL THEN
        EXECUTE format('CREATE TABLE pipeline.job_history_legacy PARTITION OF pipeline.job_history '
                       'FOR VALUES FROM (%L) TO (%L)', first, today);
    END IF;
END
$$;
-- Today, the 7 days after it, and any later day a row finished in (a clock that ran ahead).
SELECT pipeline.make_history_partitions(
    (now() AT TIME ZONE 'UTC')::date,
    greatest((now() AT TIME ZONE 'UTC')::date + 7,
             (SELECT (max(finished_at) AT TIME ZONE 'UTC')::date FROM pipeline.active_jobs
              WHERE status IN ('done', 'failed', 'cancelled'))));

WITH gone AS (
    DELETE FROM pipeline.active_jobs
    WHERE status IN ('done', 'failed', 'cancelled')
    RETURNING *
)
INSERT INTO pipeline.job_history
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, coalesce(finished_at, created_at), claims, suspect,
       crash_reclaims, releases, holds_slot
FROM gone;

-- What the hot table needs no more: finished rows (jobs_finished, and 0007's admin indexes,
-- made again on the history) and dedup over every job (pipeline.dedup_keys). It keeps the
-- ready and running indexes, and the run's and parent's for live runs.
DROP INDEX pipeline.jobs_finished;
DROP INDEX pipeline.jobs_dedup;
DROP INDEX pipeline.jobs_tenant;
DROP INDEX pipeline.jobs_failed;
DROP INDEX pipeline.jobs_created;
ALTER TABLE pipeline.active_jobs DROP CONSTRAINT active_jobs_status_check;
ALTER TABLE pipeline.active_jobs ADD CONSTRAINT active_jobs_status_check
    CHECK (status IN ('queued', 'running'));

-- A child finished (an insert here) or retried (a delete here or from the kept rows): its
-- join counts it (sql/functions/join_progress.sql). Inserts into job_history_kept are
-- retention's copies of rows counted already, so they count nothing.
CREATE TRIGGER job_history_join_finished
    AFTER INSERT ON pipeline.job_history
    FOR EACH ROW
    WHEN (NEW.join_id IS NOT NULL)
    EXECUTE FUNCTION pipeline.join_progress();
CREATE TRIGGER job_history_join_retried
    AFTER DELETE ON pipeline.job_history
    FOR EACH ROW
    WHEN (OLD.join_id IS NOT NULL)
    EXECUTE FUNCTION pipeline.join_progress();
CREATE TRIGGER job_history_kept_join_retried
    AFTER DELETE ON pipeline.job_history_kept
    FOR EACH ROW
    WHEN (OLD.join_id IS NOT NULL)
    EXECUTE FUNCTION pipeline.join_progress();

-- The status views again: those of queued and running jobs read the hot table, those of
-- finished ones the view (they read pipeline.jobs, the table, until now).
CREATE OR REPLACE VIEW pipeline.oldest_ready AS
SELECT r.type AS stage,
       count(*) AS ready,
       min(r.run_after) AS oldest_run_after,
       extract(epoch FROM now() - min(r.run_after))::double precision AS oldest_age_s
FROM (
    -- Two arms, one per ready index: "status = 'queued'" alone implies neither predicate.
    SELECT type, run_after FROM pipeline.active_jobs
    WHERE status = 'queued' AND tenant_id IS NOT NULL AND run_after <= now()
    UNION ALL
    SELECT type, run_after FROM pipeline.active_jobs
    WHERE status = 'queued' AND tenant_id IS NULL AND run_after <= now()
) AS r
GROUP BY r.type;

CREATE OR REPLACE VIEW pipeline.failures_hourly AS
SELECT type AS stage, date_trunc('hour', finished_at) AS hour, count(*) AS failed
FROM pipeline.jobs
WHERE status = 'failed'
  AND finished_at >= date_trunc('hour', now()) - interval '23 hours'
GROUP BY type, date_trunc('hour', finished_at);

CREATE OR REPLACE VIEW pipeline.expired_leases AS
SELECT id, type AS stage, tenant_id, worker_id, attempts, max_attempts, leased_until,
       extract(epoch FROM now() - leased_until)::double precision AS expired_for_s
FROM pipeline.active_jobs
WHERE status = 'running' AND leased_until < now();

CREATE OR REPLACE VIEW pipeline.attempts AS
SELECT type AS stage,
       count(*) FILTER (WHERE finished_at >= now() - interval '1 hour') AS completed_1h,
       (avg(attempts) FILTER (WHERE finished_at >= now() - interval '1 hour'))::double precision
           AS avg_attempts_1h,
       max(attempts) FILTER (WHERE finished_at >= now() - interval '1 hour') AS max_attempts_1h,
       count(*) AS completed_24h,
       avg(attempts)::double precision AS avg_attempts_24h,
       max(attempts) AS max_attempts_24h
FROM pipeline.jobs
WHERE status = 'done' AND finished_at >= now() - interval '24 hours'
GROUP BY type;

CREATE OR REPLACE VIEW pipeline.durations AS
SELECT type AS stage,
       count(*) AS completed,
       percentile_cont(0.5) WITHIN GROUP (
           ORDER BY extract(epoch FROM finished_at - started_at))::double precision AS p50_s,
       percentile_cont(0.95) WITHIN GROUP (
           ORDER BY extract(epoch FROM finished_at - started_at))::double precision AS p95_s,
       max(extract(epoch FROM finished_at - started_at))::double precision AS max_s
FROM pipeline.jobs
WHERE status = 'done' AND finished_at >= now() - interval '1 hour' AND started_at IS NOT NULL
GROUP BY type;

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
    SELECT type, 0, 0, count(*) FILTER (WHERE finished_at >= now() - interval '1 hour'), count(*)
    FROM pipeline.jobs WHERE status = 'failed' AND finished_at >= now() - interval '24 hours'
    GROUP BY type
) AS p
GROUP BY p.stage;

CREATE OR REPLACE VIEW pipeline.tenant_load AS
SELECT k.tenant_id, k.stage, k.running, k.cap, k.cap - k.running AS free,
       (SELECT count(*) FROM pipeline.active_jobs j
        WHERE j.status = 'queued' AND j.tenant_id = k.tenant_id AND j.type = k.stage) AS queued
FROM (
    SELECT coalesce(c.tenant_id, s.tenant_id) AS tenant_id,
           coalesce(c.stage, s.stage) AS stage,
           coalesce(s.running, 0) AS running,
           c.cap
    FROM pipeline.tenant_caps c
    FULL JOIN pipeline.tenant_slots s ON s.tenant_id = c.tenant_id AND s.stage = c.stage
    WHERE c.cap IS NOT NULL OR s.running > 0
) AS k;

CREATE OR REPLACE VIEW pipeline.live_workers AS
SELECT w.id, w.hostname, w.pid, w.stages, w.concurrency, w.started_at, w.last_seen,
       extract(epoch FROM now() - w.last_seen)::double precision AS seen_ago_s,
       coalesce(f.in_flight, 0) AS in_flight
FROM pipeline.workers w
LEFT JOIN (
    SELECT worker_id, count(*) AS in_flight FROM pipeline.active_jobs
    WHERE status = 'running' GROUP BY worker_id
) AS f ON f.worker_id = w.id
WHERE w.last_seen > now() - interval '180 seconds';
