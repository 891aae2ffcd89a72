-- Attempt history (issue 23, item 2): one row per attempt of a job, written by the statement
-- that ends the attempt (a completion, retry, failure, release, reclaim or cancel), in the same
-- statement as the job's own change, so it costs no round trip of its own. A running attempt
-- has no row yet: it is the job's row in pipeline.active_jobs. A job's last_error is now its
-- last attempt's error alone: a job done after a failure shows none (the attempts keep it).

-- One attempt: (job_id, claims) is the claim's fencing token, so no two rows name the same
-- attempt. attempt is the charged attempt number as the claim counted it (a refunded attempt,
-- a crash reclaim's or a release's, keeps the number the next claim takes again). claimed_at
-- is the claim's time (the job's started_at), started_at when the worker began to run it (a
-- prefetched job waits for a runner in between), NULL when no worker said. logs: the lines
-- the stage logged in this attempt (pipeline/attempt_logs.py), written with the attempt's end;
-- the first ATTEMPT_LOG_CAP bytes of them, logs_dropped counts the lines past that. Deleted
-- with their job by retention (drop_history_partition, prune_runs).
CREATE TABLE pipeline.job_attempts (
    job_id       bigint      NOT NULL,
    claims       integer     NOT NULL,
    attempt      integer     NOT NULL,
    worker_id    uuid,
    claimed_at   timestamptz,
    started_at   timestamptz,
    ended_at     timestamptz NOT NULL DEFAULT now(),
    outcome      text        NOT NULL
                 CONSTRAINT job_attempts_outcome_check
                 CHECK (outcome IN ('done', 'retried', 'failed', 'timed_out', 'crashed', 'lost',
                                    'cancelled', 'given_back')),
    error        text,
    logs         text,
    logs_dropped integer     NOT NULL DEFAULT 0,
    CONSTRAINT job_attempts_pkey PRIMARY KEY (job_id, claims)
);
