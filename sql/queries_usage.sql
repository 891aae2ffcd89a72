-- What attempts consumed (pipeline/admin/usage.py: `pipeline usage`, the dashboard, the
-- metrics). Reports of a window read the daily rollup (pipeline.usage_by_day: a few rows a
-- day, whatever the history holds); a run's report reads its own jobs and attempts by index.

-- name: usage_by_stage
-- Each stage's counters since a day, summed over tenants (or one tenant's).
SELECT stage, counter, sum(amount)::float8, sum(attempts)::bigint
FROM pipeline.usage_by_day
WHERE day >= %(since)s AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
GROUP BY stage, counter
ORDER BY stage, counter;

-- name: usage_by_tenant
-- Each tenant's counters since a day (NULL: the untenanted jobs).
SELECT tenant_id, counter, sum(amount)::float8, sum(attempts)::bigint
FROM pipeline.usage_by_day
WHERE day >= %(since)s AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
GROUP BY tenant_id, counter
ORDER BY tenant_id NULLS FIRST, counter;

-- name: usage_by_day
-- Each day's counters since a day.
SELECT day::text, counter, sum(amount)::float8, sum(attempts)::bigint
FROM pipeline.usage_by_day
WHERE day >= %(since)s AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
GROUP BY day, counter
ORDER BY day, counter;

-- name: usage_of_run
-- One run's counters per stage: every attempt of its jobs once, a done job's last attempt from
-- its row (the one a done first claim has), every other from its attempt's row. By the run's
-- index on each table of pipeline.jobs, then each job's attempts by their primary key.
WITH run AS (
    SELECT id, type, status, wall_s, cpu_s, usage
    FROM pipeline.jobs
    WHERE (id = %(run_id)s OR root_id = %(run_id)s)
      AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
),
spent AS (
    SELECT type AS stage, wall_s, cpu_s, usage FROM run WHERE status = 'done'
    UNION ALL
    SELECT run.type, a.wall_s, a.cpu_s, a.usage
    FROM run JOIN pipeline.job_attempts AS a ON a.job_id = run.id
    WHERE a.outcome <> 'done'
)
SELECT s.stage, c.counter, sum(c.amount)::float8, count(*)::bigint
FROM spent AS s
CROSS JOIN LATERAL pipeline.usage_amounts(s.wall_s, s.cpu_s, s.usage) AS c
GROUP BY s.stage, c.counter
ORDER BY s.stage, c.counter;

-- name: usage_runs
-- The runs with a job finished since a day, newest first, at most %(limit)s: what
-- `pipeline usage --by run` reports on, each with usage_of_run. Reads the days' history.
SELECT DISTINCT ON (run_id) run_id
FROM (SELECT coalesce(root_id, id) AS run_id, finished_at
      FROM pipeline.job_history
      WHERE finished_at >= %(since)s::date
        AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
      ORDER BY finished_at DESC
      LIMIT %(limit)s * 20) AS f
ORDER BY run_id DESC
LIMIT %(limit)s;

-- name: usage_of_jobs
-- What each job of a run consumed over all its attempts, by job: the dashboard's run page.
WITH run AS (
    SELECT id, status, wall_s, cpu_s, usage
    FROM pipeline.jobs
    WHERE (id = %(run_id)s OR root_id = %(run_id)s)
      AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
),
spent AS (
    SELECT id, wall_s, cpu_s, usage FROM run WHERE status = 'done'
    UNION ALL
    SELECT run.id, a.wall_s, a.cpu_s, a.usage
    FROM run JOIN pipeline.job_attempts AS a ON a.job_id = run.id
    WHERE a.outcome <> 'done'
)
SELECT s.id, c.counter, sum(c.amount)::float8
FROM spent AS s
CROSS JOIN LATERAL pipeline.usage_amounts(s.wall_s, s.cpu_s, s.usage) AS c
GROUP BY s.id, c.counter
ORDER BY s.id, c.counter;

-- name: prices
-- The price table, by counter.
SELECT counter, price, currency FROM pipeline.prices ORDER BY counter;

-- name: set_price
-- A counter's price, in the table's one currency: nothing is written (no row back) when
-- another counter has a price in another currency.
INSERT INTO pipeline.prices AS p (counter, price, currency)
SELECT %(counter)s, %(price)s, %(currency)s
WHERE NOT EXISTS (SELECT FROM pipeline.prices
                  WHERE currency <> %(currency)s AND counter <> %(counter)s)
ON CONFLICT (counter) DO UPDATE
SET price = excluded.price, currency = excluded.currency, updated_at = now()
RETURNING counter;

-- name: clear_price
DELETE FROM pipeline.prices WHERE counter = %(counter)s RETURNING counter;
