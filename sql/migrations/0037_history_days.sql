-- The history's days with their bounds, spelled once (issue 21): retention's passes, the prune's
-- reach (sql/functions/history_day_bounds.sql) and the rollups' fold each parsed the partitions'
-- bounds themselves.
CREATE VIEW pipeline.history_days AS
SELECT i.inhrelid::regclass AS part,
       (regexp_match(b.bound, $$FROM \('([^']+)'\)$$))[1]::timestamptz AS lower,
       (regexp_match(b.bound, $$TO \('([^']+)'\)$$))[1]::timestamptz AS upper
FROM pg_inherits AS i
JOIN pg_class AS c ON c.oid = i.inhrelid
CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, 0) AS bound) AS b
WHERE i.inhparent = 'pipeline.job_history'::regclass;
