-- Rate limits (docs/limits.md): capacities set by operators and code, what the keys consumed,
-- the correction after a run, and when a blocked worker should look again. The admission
-- itself is the claim's (sql/functions/admit_limited.sql).

-- name: set_limit
-- An operator's capacity wins over code's, and keeps winning: a worker's default never
-- overwrites a row set here (record_limit_defaults).
INSERT INTO pipeline.rate_limits (name, key, units, per_seconds, source)
VALUES (%(name)s, %(key)s, %(units)s, %(per)s, 'set')
ON CONFLICT (name, key) DO UPDATE
SET units = EXCLUDED.units, per_seconds = EXCLUDED.per_seconds, source = 'set',
    updated_at = now();

-- name: clear_limit
-- The operator's capacity of one key (or '*'), or of every key when key is NULL; a code
-- default comes back when a worker that declares it starts.
DELETE FROM pipeline.rate_limits
WHERE name = %(name)s AND (%(key)s::text IS NULL OR key = %(key)s)
RETURNING key;

-- name: record_limit_defaults
-- A starting worker's code defaults (Limit(capacity=, per=)), for the '*' key of each limit:
-- a default replaces an older default, never an operator's row.
INSERT INTO pipeline.rate_limits AS r (name, key, units, per_seconds, source)
SELECT d.name, '*', d.units, d.per, 'code'
FROM jsonb_to_recordset(%(defaults)s::jsonb) AS d(name text, units bigint, per integer)
ORDER BY d.name
ON CONFLICT (name, key) DO UPDATE
SET units = EXCLUDED.units, per_seconds = EXCLUDED.per_seconds, updated_at = now()
WHERE r.source = 'code' AND (r.units, r.per_seconds) <> (EXCLUDED.units, EXCLUDED.per_seconds);

-- name: limits_list
-- Every (limit, key) with a capacity or with charges: its capacity (its own row, else the
-- limit's '*' row), the units charged in the window now (every bucket from now - per + 1 on,
-- as the claim counts them), and the queued jobs charged to it. The queued jobs are read from
-- the rows that carry charges: the whole of active_jobs is scanned, an operator's price.
WITH queued AS (
    SELECT c ->> 'name' AS name, c ->> 'key' AS key, count(*) AS waiting,
           sum((c ->> 'units')::bigint) AS waiting_units
    FROM pipeline.active_jobs AS j
    CROSS JOIN LATERAL jsonb_array_elements(j.limits) AS c
    WHERE j.limits IS NOT NULL AND j.status = 'queued'
    GROUP BY 1, 2
),
pairs AS (
    SELECT name, key FROM pipeline.rate_limits
    UNION
    SELECT DISTINCT name, key FROM pipeline.rate_limit_used
    UNION
    SELECT name, key FROM queued
)
SELECT p.name, p.key, c.units AS capacity, c.per_seconds, c.source, c.key AS capacity_key,
       coalesce((SELECT sum(u.units) FROM pipeline.rate_limit_used AS u
                 WHERE u.name = p.name AND u.key = p.key
                   AND u.second > floor(extract(epoch FROM now())) - c.per_seconds), 0)::bigint
           AS used,
       coalesce(q.waiting, 0)::bigint AS waiting, coalesce(q.waiting_units, 0)::bigint
           AS waiting_units
FROM pairs AS p
LEFT JOIN LATERAL (
    SELECT r.units, r.per_seconds, r.source, r.key FROM pipeline.rate_limits AS r
    WHERE r.name = p.name AND r.key IN (p.key, '*')
    ORDER BY r.key = '*'
    LIMIT 1
) AS c ON true
LEFT JOIN queued AS q ON q.name = p.name AND q.key = p.key
WHERE (%(name)s::text IS NULL OR p.name = %(name)s)
  -- A '*' row shows as the default; a key without charges or jobs is the default's alone.
ORDER BY p.name, p.key = '*' DESC, p.key
LIMIT %(limit)s;

-- name: limit_correct
-- After a run: the bucket its claim charged (the second of started_at, the claim's now()) is
-- corrected by what it really used less what it was charged, for the limits the worker
-- measured (actual: {"name": units}). Fenced, as every write after a claim. A correction
-- takes no key's lock: it may push a window past its capacity after the fact, and the claims
-- then wait until the window has passed (docs/limits.md).
INSERT INTO pipeline.rate_limit_used AS u (name, key, second, units)
SELECT c ->> 'name', c ->> 'key', floor(extract(epoch FROM j.started_at))::bigint,
       a.units::bigint - (c ->> 'units')::bigint
FROM pipeline.active_jobs AS j
CROSS JOIN LATERAL jsonb_array_elements(j.limits) AS c
JOIN jsonb_each_text(%(actual)s::jsonb) AS a(name, units) ON a.name = c ->> 'name'
WHERE j.id = %(id)s AND j.claims = %(claims)s AND j.status IS NOT DISTINCT FROM 'running'
  AND a.units::bigint <> (c ->> 'units')::bigint
  -- Only a key with a capacity is counted (pipeline.admit_limited).
  AND EXISTS (SELECT FROM pipeline.rate_limits AS r
              WHERE r.name = c ->> 'name' AND r.key IN (c ->> 'key', '*'))
ORDER BY 1, 2
ON CONFLICT (name, key, second) DO UPDATE SET units = u.units + EXCLUDED.units;

-- name: limit_wait
-- Seconds until the window of a limit named next lets more in: the earliest moment its oldest
-- counted bucket leaves it (that bucket's second + per), over the keys of those limits with
-- units in their window now; NULL when no window holds anything. A worker whose claim came
-- back short sleeps this long at most (pipeline/worker/producer.py): it reads only the buckets
-- of the limits its stages declare, a few rows per key.
-- Negative when the window moved since: the caller claims at once.
SELECT (min(o.second + o.per_seconds) - extract(epoch FROM now()))::float8
FROM (
    SELECT DISTINCT ON (u.name, u.key) u.second, c.per_seconds
    FROM pipeline.rate_limit_used AS u
    CROSS JOIN LATERAL (
        SELECT r.per_seconds FROM pipeline.rate_limits AS r
        WHERE r.name = u.name AND r.key IN (u.key, '*')
        ORDER BY r.key = '*'
        LIMIT 1
    ) AS c
    WHERE u.name = ANY (%(names)s::text[])
      AND u.second > floor(extract(epoch FROM now())) - c.per_seconds
    ORDER BY u.name, u.key, u.second
) AS o;
