-- The hot table vacuumed by the workers themselves when its dead rows pile up faster than
-- autovacuum comes by (pipeline/maintenance/hot_vacuum.py).

-- name: hot_vacuum_stats
-- Every few seconds in every worker, so it reads no table: the counts are the statistics'
-- (shared memory, a hash lookup each), as autovacuum reads them. They lag the writes by up to a
-- second (a backend sends its counts at most once a second), which is nothing to a threshold of
-- thousands of rows. `vacuuming`: a vacuum of the table runs now, so this round has nothing to
-- do. A role without pg_read_all_stats sees no relid in another role's row (autovacuum's
-- among them): then it reads false, and the VACUUM's SKIP_LOCKED passes the table over instead.
SELECT pg_stat_get_dead_tuples(t.oid) AS dead,
       pg_stat_get_live_tuples(t.oid) AS live,
       EXISTS (SELECT FROM pg_stat_progress_vacuum AS p WHERE p.relid = t.oid) AS vacuuming
FROM (SELECT 'pipeline.active_jobs'::regclass::oid AS oid) AS t;

-- name: hot_vacuum_allowed
-- Whether VACUUM would vacuum the table for this role rather than warn and pass it over: its
-- owner (or a role with the owner's rights: a superuser among them), the database's owner, and
-- from PostgreSQL 17 a role granted MAINTAIN on it (or pg_maintain). The CASE keeps the
-- privilege name 'MAINTAIN', unknown before 17, from being read there.
SELECT pg_has_role(c.relowner, 'USAGE')
    OR pg_has_role((SELECT d.datdba FROM pg_database AS d WHERE d.datname = current_database()), 'USAGE')
    OR CASE WHEN current_setting('server_version_num')::int >= 170000
            THEN has_table_privilege(c.oid, 'MAINTAIN')
            ELSE false END
FROM pg_class AS c
WHERE c.oid = 'pipeline.active_jobs'::regclass;

-- name: hot_vacuum
-- In autocommit: VACUUM cannot run in a transaction. SKIP_LOCKED: a vacuum of the table already
-- running (another worker's, autovacuum's) holds the lock it needs, and this one then passes
-- the table over at once with a warning (55P03) rather than wait and vacuum again what was just
-- vacuumed; so workers that decide together vacuum once, with no lock of their own (a session
-- advisory lock means nothing behind a transaction pooler). No ANALYZE: the live rows' count,
-- which the planner reads, VACUUM sets itself, and autoanalyze follows the table's churn.
VACUUM (SKIP_LOCKED) pipeline.active_jobs;
