-- Rate limits in units per key (issue 24, docs/limits.md): a job's charges, the capacities,
-- and what each key consumed, per second.

-- The job's charges, computed at enqueue from its stage's limits (pipeline/limits.py): a JSON
-- array of {"name", "key", "units"}; NULL for a job of a stage without limits, which costs
-- the row a bit of its null bitmap and the plain claim nothing.
ALTER TABLE pipeline.active_jobs ADD COLUMN limits jsonb;

-- A fan-out's then job's charges, which it takes when the join enqueues it.
ALTER TABLE pipeline.joins ADD COLUMN then_limits jsonb;

-- A stage's limits as a worker recorded them (Limit.recorded()), so that a job enqueued by
-- name, without the stage's code, is charged the same; NULL: the stage has none.
ALTER TABLE pipeline.stages ADD COLUMN limits jsonb;

-- Capacities: `units` per `per_seconds` for the limit `name` and one `key`, or '*' for every
-- key without a row of its own. source 'set' is an operator's (`pipeline limits set`), which a
-- worker's code default (Limit(capacity=, per=), source 'code') never overwrites.
CREATE TABLE pipeline.rate_limits (
    name        text        NOT NULL,
    key         text        NOT NULL DEFAULT '*',
    units       bigint      NOT NULL CONSTRAINT rate_limits_units_check CHECK (units >= 0),
    per_seconds integer     NOT NULL
                CONSTRAINT rate_limits_per_seconds_check CHECK (per_seconds BETWEEN 1 AND 86400),
    source      text        NOT NULL DEFAULT 'set'
                CONSTRAINT rate_limits_source_check CHECK (source IN ('set', 'code')),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, key)
);

-- What each key consumed, per second (the claim's now(), as epoch seconds): the buckets a
-- sliding window sums. Written by the holder of the key's lock (an advisory lock: see
-- sql/functions/admit_limited.sql), and by corrections.
CREATE TABLE pipeline.rate_limit_used (
    name   text   NOT NULL,
    key    text   NOT NULL,
    second bigint NOT NULL,
    units  bigint NOT NULL,
    PRIMARY KEY (name, key, second)
);

-- claim_pick returns each picked job's charges (sql/functions/claim_pick.sql): a new
-- result type, which CREATE OR REPLACE cannot make. IF EXISTS: a database made from scratch
-- runs this before any function file.
DROP FUNCTION IF EXISTS pipeline.claim_pick(pipeline.claim_group[], integer[]);
