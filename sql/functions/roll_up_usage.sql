-- The usage rollup (pipeline.usage_by_day), kept in the statement that ends attempts: each
-- attempt is counted once, in the UTC day it ended. A done attempt from the job's history row,
-- which every done job has (a done first claim that logged nothing has no attempt row:
-- sql/queries.sql, complete); every other attempt (retried, failed, timed out, crashed, given
-- back, waiting) from its row in pipeline.job_attempts, which it always has. Only inserts are
-- counted: what an attempt consumed stays consumed when its job is retried or pruned.
--
-- Statement-level, over the statement's transition table `changed`, like roll_up_finished.sql.
-- The history's rows are the hot path (every done job, a batch of them per acknowledgement):
-- wall_s and cpu_s are summed per (day, tenant, stage) first and only then made counter rows,
-- and only the rows with reported counters are expanded, so that a job that reports nothing
-- costs two sums. The attempts' rows are few (retries, failures); their job's tenant and stage
-- are read by id, in a query planned only when there are such rows: the acknowledgement
-- inserts into the attempts in every batch, mostly no row, and planning the read of
-- pipeline.jobs (a partition a day) each time cost it 6 us a job.
CREATE OR REPLACE FUNCTION pipeline.roll_up_usage() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    days date[];
    tenants text[];
    stages text[];
    counters text[];
    amounts double precision[];
    attempts bigint[];
BEGIN
    IF TG_TABLE_NAME = 'job_history' THEN
        SELECT array_agg(day), array_agg(tenant_id), array_agg(stage), array_agg(counter),
               array_agg(amount), array_agg(n)
        INTO days, tenants, stages, counters, amounts, attempts
        FROM (
            SELECT g.day, g.tenant_id, g.stage, c.counter, c.amount, c.n
            FROM (SELECT (finished_at AT TIME ZONE 'UTC')::date AS day, tenant_id, type AS stage,
                         sum(wall_s)::double precision AS wall_s, count(wall_s) AS walls,
                         sum(cpu_s)::double precision AS cpu_s, count(cpu_s) AS cpus
                  FROM changed
                  WHERE status = 'done' AND wall_s IS NOT NULL
                  GROUP BY 1, 2, 3) AS g
            CROSS JOIN LATERAL (VALUES ('wall_s', g.wall_s, g.walls),
                                       ('cpu_s', g.cpu_s, g.cpus)) AS c(counter, amount, n)
            WHERE c.n > 0
            UNION ALL
            SELECT (h.finished_at AT TIME ZONE 'UTC')::date, h.tenant_id, h.type, u.key,
                   sum(u.value::double precision), count(*)
            FROM changed AS h, jsonb_each(h.usage) AS u
            WHERE h.status = 'done' AND h.usage IS NOT NULL AND jsonb_typeof(u.value) = 'number'
            GROUP BY 1, 2, 3, 4
        ) AS s;
    ELSIF EXISTS (SELECT FROM changed AS a
                  WHERE a.outcome <> 'done'
                    AND (a.wall_s IS NOT NULL OR a.cpu_s IS NOT NULL OR a.usage IS NOT NULL)) THEN
        SELECT array_agg(day), array_agg(tenant_id), array_agg(stage), array_agg(counter),
               array_agg(amount), array_agg(n)
        INTO days, tenants, stages, counters, amounts, attempts
        FROM (
            SELECT (a.ended_at AT TIME ZONE 'UTC')::date AS day, j.tenant_id, j.type AS stage,
                   c.counter, sum(c.amount) AS amount, count(*) AS n
            FROM changed AS a
            CROSS JOIN LATERAL (SELECT j.type, j.tenant_id FROM pipeline.jobs AS j
                                WHERE j.id = a.job_id LIMIT 1) AS j
            CROSS JOIN LATERAL pipeline.usage_amounts(a.wall_s, a.cpu_s, a.usage) AS c
            WHERE a.outcome <> 'done'
              AND (a.wall_s IS NOT NULL OR a.cpu_s IS NOT NULL OR a.usage IS NOT NULL)
            GROUP BY 1, 2, 3, 4
        ) AS s;
    END IF;
    IF days IS NOT NULL THEN
        PERFORM pipeline.add_usage(days, tenants, stages, counters, amounts, attempts);
    END IF;
    RETURN NULL;
END
$$;
