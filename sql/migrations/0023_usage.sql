-- What each attempt consumed (pipeline/usage.py, docs/usage.md): the seconds it ran (wall_s)
-- and the CPU it took (cpu_s), measured by the worker, and the counters its stage reported
-- (usage: numbers and labels, NULL when it reported none). An attempt's row keeps them; a done
-- job's history row keeps its last attempt's too, since a done first claim that logged nothing
-- has no attempt row (sql/queries.sql, complete). Nullable and small: a job that reports
-- nothing adds two reals to the rows it writes anyway, and no row.
ALTER TABLE pipeline.job_history
    ADD COLUMN wall_s real, ADD COLUMN cpu_s real, ADD COLUMN usage jsonb;
-- The same columns in the same order: retention copies rows here as they are.
ALTER TABLE pipeline.job_history_kept
    ADD COLUMN wall_s real, ADD COLUMN cpu_s real, ADD COLUMN usage jsonb;
ALTER TABLE pipeline.job_attempts
    ADD COLUMN wall_s real, ADD COLUMN cpu_s real, ADD COLUMN usage jsonb;

-- A finished job's last attempt's usage, for readers; NULL for queued and running ones.
CREATE OR REPLACE VIEW pipeline.jobs AS
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
       holds_slot, traceparent, NULL::real AS wall_s, NULL::real AS cpu_s, NULL::jsonb AS usage
FROM pipeline.active_jobs
UNION ALL
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
       holds_slot, traceparent, wall_s, cpu_s, usage
FROM pipeline.job_history
UNION ALL
SELECT id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
       leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
       join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
       holds_slot, traceparent, wall_s, cpu_s, usage
FROM pipeline.job_history_kept;

-- The rows the finishing statements write take the attempt's usage now: new arguments, so the
-- old functions go and their files make the new ones (IF EXISTS: see 0022).
DROP FUNCTION IF EXISTS pipeline.finished_job(pipeline.active_jobs, text, text, boolean, boolean);
DROP FUNCTION IF EXISTS pipeline.ended_attempt(pipeline.active_jobs, text, text, double precision,
                                               text, integer);

-- Usage summed per UTC day, tenant, stage and counter (wall_s and cpu_s among the counters):
-- what `pipeline usage`, the dashboard, the metrics and budgets (pipeline.tenant_usage) read,
-- a few rows a day whatever the history holds. Kept by statement-level triggers on the
-- attempts and the history (sql/functions/roll_up_usage.sql), in the transaction that ends
-- each attempt. Only ever added to: what an attempt consumed stays consumed when its job is
-- retried or pruned. Shards as in pipeline.finished_by_minute: each backend adds to its own
-- (its pid modulo 8), so concurrent finishers never wait on one row; readers sum them.
-- attempts: how many attempts added to the row. tenant_id NULL: untenanted jobs.
CREATE TABLE pipeline.usage_by_day (
    day       date             NOT NULL,
    tenant_id text,
    stage     text             NOT NULL,
    counter   text             NOT NULL,
    shard     smallint         NOT NULL,
    amount    double precision NOT NULL,
    attempts  bigint           NOT NULL,
    -- A tenant's counter since a day (tenant_usage, in the claim of a tenant with a budget):
    -- one range of this key.
    CONSTRAINT usage_by_day_key
        UNIQUE NULLS NOT DISTINCT (tenant_id, counter, day, stage, shard)
) WITH (fillfactor = 70);
-- Reports of a window across tenants (`pipeline usage --since`, the metrics).
CREATE INDEX usage_by_day_day ON pipeline.usage_by_day (day);

CREATE TRIGGER job_history_roll_up_usage
    AFTER INSERT ON pipeline.job_history
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT
    EXECUTE FUNCTION pipeline.roll_up_usage();
-- An attempt's row that is not a done one (whose job's history row counts it), with usage.
CREATE TRIGGER job_attempts_roll_up_usage
    AFTER INSERT ON pipeline.job_attempts
    FOR EACH ROW
    WHEN (NEW.outcome <> 'done'
          AND (NEW.wall_s IS NOT NULL OR NEW.cpu_s IS NOT NULL OR NEW.usage IS NOT NULL))
    EXECUTE FUNCTION pipeline.roll_up_usage();

-- What a unit of a counter costs (`pipeline usage prices set`), in one currency: reports show
-- money where a counter has a price.
CREATE TABLE pipeline.prices (
    counter    text             NOT NULL CONSTRAINT prices_pkey PRIMARY KEY,
    price      double precision NOT NULL CONSTRAINT prices_price_check CHECK (price >= 0),
    currency   text             NOT NULL,
    updated_at timestamptz      NOT NULL DEFAULT now()
);
