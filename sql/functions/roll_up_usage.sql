-- The usage rollup (pipeline.usage_by_day), kept in the statement that ends attempts: each
-- attempt is counted once, in the UTC day it ended. A done attempt from the job's history row,
-- which every done job has (a done first claim that logged nothing has no attempt row:
-- sql/queries.sql, complete); every other attempt (retried, failed, timed out, crashed, given
-- back, waiting) from its row in pipeline.job_attempts, which it always has. Only inserts are
-- counted: what an attempt consumed stays consumed when its job is retried or pruned.
--
-- The history's rows are the hot path (every done job, a batch of them per acknowledgement):
-- a statement-level trigger over the transition table `changed`, like roll_up_finished.sql,
-- with one upsert spelled here rather than a call of pipeline.add_usage (a call per batch
-- cost the acknowledgement 0.4 us a job). wall_s and cpu_s are summed per (day, tenant,
-- stage) first and only then made counter rows, and only the rows with reported counters are
-- expanded, so that a job that reports nothing costs two sums. Each backend adds to its own
-- shard (pipeline.rollup_shard), in key order, as add_usage.sql says why.
--
-- The attempts' rows are few (retries, failures), and the acknowledgement inserts none in
-- most batches: a row-level trigger whose WHEN clause only lets those through (a
-- statement-level one ran, and planned its read, for every batch: 6 us a job), which reads
-- its job's tenant and stage by id, in active_jobs first.
CREATE OR REPLACE FUNCTION pipeline.roll_up_usage() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- Its statements planned once per connection (see count_runs.sql).
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    job_stage text;
    job_tenant text;
    backend_shard smallint := pipeline.rollup_shard();
BEGIN
    IF TG_LEVEL = 'ROW' THEN
        -- A retried or given-back job is still in active_jobs: found there, its attempt does
        -- not name the history, whose every partition and index a read of it locks.
        SELECT j.type, j.tenant_id INTO job_stage, job_tenant
        FROM pipeline.active_jobs AS j WHERE j.id = NEW.job_id;
        IF NOT FOUND THEN
            SELECT j.type, j.tenant_id INTO job_stage, job_tenant
            FROM pipeline.jobs AS j WHERE j.id = NEW.job_id LIMIT 1;
        END IF;
        PERFORM pipeline.add_usage(array_agg((NEW.ended_at AT TIME ZONE 'UTC')::date),
                                   array_agg(job_tenant), array_agg(job_stage),
                                   array_agg(c.counter), array_agg(c.amount),
                                   array_agg(1::bigint))
        FROM pipeline.usage_amounts(NEW.wall_s, NEW.cpu_s, NEW.usage) AS c
        HAVING count(*) > 0;
        RETURN NULL;
    END IF;
    INSERT INTO pipeline.usage_by_day AS r
        (day, tenant_id, stage, counter, shard, amount, attempts)
    SELECT g.day, g.tenant_id, g.stage, c.counter, backend_shard, c.amount, c.n
    FROM (SELECT (finished_at AT TIME ZONE 'UTC')::date AS day, tenant_id, type AS stage,
                 sum(wall_s)::double precision AS wall_s, count(wall_s) AS walls,
                 sum(cpu_s)::double precision AS cpu_s, count(cpu_s) AS cpus
          FROM changed
          WHERE status = 'done' AND wall_s IS NOT NULL
          GROUP BY 1, 2, 3) AS g,
         (VALUES ('cpu_s'), ('wall_s')) AS k(counter),
         LATERAL (SELECT k.counter,
                         CASE k.counter WHEN 'wall_s' THEN g.wall_s ELSE g.cpu_s END AS amount,
                         CASE k.counter WHEN 'wall_s' THEN g.walls ELSE g.cpus END AS n) AS c
    WHERE c.n > 0
    ORDER BY g.tenant_id, c.counter, g.day, g.stage
    ON CONFLICT (tenant_id, counter, day, stage, shard) DO UPDATE
    SET amount = r.amount + excluded.amount,
        attempts = r.attempts + excluded.attempts;
    -- The reported counters, of the few rows that have any: a statement of its own, run only
    -- when one has.
    IF EXISTS (SELECT FROM changed WHERE usage IS NOT NULL AND status = 'done') THEN
        INSERT INTO pipeline.usage_by_day AS r
            (day, tenant_id, stage, counter, shard, amount, attempts)
        SELECT (h.finished_at AT TIME ZONE 'UTC')::date, h.tenant_id, h.type, u.key, backend_shard,
               sum(u.value::double precision), count(*)
        FROM changed AS h, jsonb_each(h.usage) AS u
        WHERE h.status = 'done' AND h.usage IS NOT NULL AND jsonb_typeof(u.value) = 'number'
        GROUP BY 1, 2, 3, 4
        ORDER BY 2, 4, 1, 3
        ON CONFLICT (tenant_id, counter, day, stage, shard) DO UPDATE
        SET amount = r.amount + excluded.amount,
            attempts = r.attempts + excluded.attempts;
    END IF;
    RETURN NULL;
END
$$;
