-- The claim's look past a blocked key (docs/limits.md, "head of line"): for each group of
-- p_groups whose picks a rate limit refused (p_refused, each with its group's position in
-- p_refused_from), as many of its ready jobs as were refused, taken from further on in the
-- group, among the next `lookahead` (100) of its jobs, skipping those the claim picked
-- (p_picked: it holds their locks, which SKIP LOCKED does not skip) and every job charged to
-- a key that refused one. So a key whose window is full holds back its own jobs, not the jobs
-- of other keys queued behind them in the same (stage, tenant) group; past `lookahead` jobs of
-- blocked keys, the group waits for their window like the keys themselves.
--
-- The candidates are read without a lock, in the group's order (one arm per ready index, as
-- in pipeline.claim_pick), then locked FOR UPDATE SKIP LOCKED: the lock re-checks each one's
-- WHERE on its latest version, so a job another claimer took meanwhile is left out. The jobs
-- it returns still have to be admitted (pipeline.admit_limited): the claim calls it again.
CREATE OR REPLACE FUNCTION pipeline.pick_past_blocked(
    p_groups pipeline.claim_group[], p_picked bigint[], p_refused bigint[],
    p_refused_from integer[]
) RETURNS TABLE (id bigint, group_at integer, limits jsonb)
LANGUAGE sql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
WITH lookahead(n) AS (VALUES (100)),
blocked AS MATERIALIZED (
    SELECT DISTINCT c ->> 'name' AS name, c ->> 'key' AS key
    FROM pipeline.active_jobs AS j
    CROSS JOIN LATERAL jsonb_array_elements(j.limits) AS c
    WHERE j.id = ANY (p_refused)
),
wanted AS (
    SELECT r.g AS i, count(*)::integer AS room
    FROM unnest(p_refused_from) AS r(g)
    GROUP BY r.g
)
SELECT p.id, w.i, p.limits
FROM wanted AS w
CROSS JOIN LATERAL (SELECT (p_groups[w.i]).*) AS g
CROSS JOIN LATERAL (
    SELECT j.id, j.limits FROM pipeline.active_jobs AS j
    WHERE j.id IN (
        SELECT a.id FROM (
            SELECT j2.id FROM pipeline.active_jobs AS j2
            WHERE g.tenant_id IS NOT NULL AND j2.status = 'queued' AND j2.type = g.type
              AND j2.tenant_id = g.tenant_id AND j2.run_after <= now()
              AND j2.id <> ALL (p_picked)
            ORDER BY j2.priority DESC, j2.run_after, j2.id
            LIMIT (SELECT n FROM lookahead)
        ) AS a
        UNION ALL
        SELECT a.id FROM (
            SELECT j2.id FROM pipeline.active_jobs AS j2
            WHERE g.tenant_id IS NULL AND j2.status = 'queued' AND j2.type = g.type
              AND j2.tenant_id IS NULL AND j2.run_after <= now()
              AND j2.id <> ALL (p_picked)
            ORDER BY j2.priority DESC, j2.run_after, j2.id
            LIMIT (SELECT n FROM lookahead)
        ) AS a
    )
      AND j.status = 'queued' AND j.type = g.type AND j.run_after <= now()
      AND NOT EXISTS (
          SELECT FROM jsonb_array_elements(j.limits) AS c
          JOIN blocked AS b ON b.name = c ->> 'name' AND b.key = c ->> 'key'
          WHERE j.limits IS NOT NULL
      )
    ORDER BY j.priority DESC, j.run_after, j.id
    LIMIT w.room
    FOR UPDATE OF j SKIP LOCKED
) AS p
$$;
