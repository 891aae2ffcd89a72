-- The claim's group selection: the (stage, tenant) groups of ready work among p_types, each
-- with its cap (pipeline.tenant_caps, else the worker's default for the stage, p_caps by
-- p_cap_stages)
-- and its head, the best ready job, in the order the claim serves them: best priority first,
-- then least pass first (weighted fair share across tenants within a priority level, below).
-- A tenant's pairs past one of its budgets (pipeline.budgets) are left out.
-- Jobs without a tenant are one group per stage, served first within their priority, as before
-- tenants had passes. Returns with each group its weight (tenant_passes' copy of
-- tenant_weights', 1 without one) and its stage's floor, which the claim writes back with the
-- passes it advances (pipeline.take_passes).
--
-- A pair's pass is its virtual time: the jobs claims took from it over its weight, counted from
-- where it (re)joined. Serving the least pass first gives each pair with work a share of the
-- claims in proportion to its weight, and a pair without work (or at its cap, or past its
-- budget) none, its share going to the others. A pair that comes back to work, or comes for
-- the first time, starts at the stage's virtual time: the greatest floor among the pairs here,
-- a floor being the least pass the claim that last served a pair saw among the stage's pairs
-- with work. Its pass below that counts as that: a pair banks no credit by being idle.
--
-- A SQL function of one SELECT, STABLE and without SET options, so that the planner inlines it
-- into pipeline.claim's statement: the plan, and its index conditions, are those of the query
-- spelled in place. Hence no fixed search_path, unlike every other function here: its names are
-- qualified, and inlined, it runs under pipeline.claim's.
CREATE OR REPLACE FUNCTION pipeline.claim_groups(
    p_types text[], p_cap_stages text[], p_caps integer[]
) RETURNS TABLE (grp pipeline.claim_group, weight double precision, floor double precision)
LANGUAGE sql STABLE
AS $$
-- Distinct tenants with queued jobs per stage, found by skipping through jobs_ready one tenant at
-- a time; then each one's best ready job, for the order. The skips order by jobs_ready's own
-- order, which an index on tenant_id alone (jobs_tenant) could not give: it would tempt the
-- planner into walking every row of a stage with none queued. Each group keeps its head's keys:
-- the picks start their index scans there (pipeline.claim_pick). The entries before a head are
-- of jobs taken since the last vacuum: one probe a group steps over them (the skip, whose first
-- row is the tenant's head unless that row waits for a later run_after), and no pick does.
SELECT ROW(g.type, g.tenant_id, g.cap, g.priority, g.run_after, g.head_id)::pipeline.claim_group,
       g.weight, min(g.pass) OVER (PARTITION BY g.type)
FROM (
-- The passes as the order counts them: none below the stage's virtual time.
SELECT g.type, g.tenant_id, g.cap, g.priority, g.run_after, g.head_id, g.weight,
       CASE WHEN g.tenant_id IS NOT NULL
            THEN greatest(g.own_pass, coalesce(max(g.floor) OVER (PARTITION BY g.type), 0))
       END AS pass
FROM (
    WITH RECURSIVE tenants(type, tenant_id, priority, run_after, id) AS (
        SELECT t.type, f.tenant_id, f.priority, f.run_after, f.id
        FROM unnest(p_types) AS t(type)
        CROSS JOIN LATERAL (
            SELECT j.tenant_id, j.priority, j.run_after, j.id FROM pipeline.active_jobs j
            WHERE j.status = 'queued' AND j.type = t.type AND j.tenant_id IS NOT NULL
            ORDER BY j.tenant_id, j.priority DESC, j.run_after, j.id
            LIMIT 1
        ) AS f
        UNION ALL
        SELECT tn.type, f.tenant_id, f.priority, f.run_after, f.id
        FROM tenants tn
        CROSS JOIN LATERAL (
            SELECT j.tenant_id, j.priority, j.run_after, j.id FROM pipeline.active_jobs j
            WHERE j.status = 'queued' AND j.type = tn.type
              AND j.tenant_id > tn.tenant_id
            ORDER BY j.tenant_id, j.priority DESC, j.run_after, j.id
            LIMIT 1
        ) AS f
    )
    SELECT tn.type, tn.tenant_id, head.priority, head.run_after, head.id AS head_id,
           coalesce(p.pass, 0) AS own_pass, p.floor,
           -- A pair never served yet (or since the slot repair found it idle) has no row: its
           -- weight is the operator's, looked up in that case alone (coalesce goes no further
           -- than the row's).
           coalesce(p.weight, (SELECT w.weight FROM pipeline.tenant_weights w
                               WHERE w.tenant_id = tn.tenant_id
                                 AND (w.stage = tn.type OR w.stage IS NULL)
                               ORDER BY w.stage NULLS LAST LIMIT 1), 1) AS weight,
           coalesce(c.cap, p_caps[array_position(p_cap_stages, tn.type)]) AS cap,
           -- The jobs holding a slot, less the slots given back since the pair's last claim
           -- (pipeline.freed_slots), looked up for a capped pair only: were they left out, a
           -- pair whose jobs all finished would stay at its cap, never claimed, and never
           -- subtract them.
           CASE
               WHEN coalesce(c.cap, p_caps[array_position(p_cap_stages, tn.type)]) IS NULL THEN 0
               ELSE coalesce((SELECT s.running FROM pipeline.tenant_slots s
                              WHERE s.tenant_id = tn.tenant_id AND s.stage = tn.type), 0)
                    - coalesce((SELECT sum(f.n) FROM pipeline.freed_slots f
                                WHERE f.tenant_id = tn.tenant_id AND f.stage = tn.type), 0)
           END AS running
    FROM tenants tn
    CROSS JOIN LATERAL (
        SELECT tn.priority, tn.run_after, tn.id WHERE tn.run_after <= now()
        UNION ALL
        -- Its first job waits for later: its best ready one, if any, is further on.
        (SELECT j.priority, j.run_after, j.id FROM pipeline.active_jobs j
         WHERE tn.run_after > now() AND j.status = 'queued' AND j.type = tn.type
           AND j.tenant_id = tn.tenant_id AND j.run_after <= now()
         ORDER BY j.priority DESC, j.run_after, j.id
         LIMIT 1)
    ) AS head
    LEFT JOIN pipeline.tenant_passes p ON p.tenant_id = tn.tenant_id AND p.stage = tn.type
    LEFT JOIN pipeline.tenant_caps c ON c.tenant_id = tn.tenant_id AND c.stage = tn.type
    -- A pair past a budget of its tenant's (for its stage or every stage) is left out: its jobs
    -- stay queued, without an attempt or a slot, until a new period or a higher limit. Without
    -- any budget, one probe a claim (evaluated once) says so; else a tenant without a budget
    -- costs one probe of pipeline.budgets that finds nothing, and one with a budget a read of
    -- its usage rollup per budget (pipeline.tenant_usage).
    WHERE NOT EXISTS (SELECT 1 FROM pipeline.budgets) OR NOT EXISTS (
        SELECT 1 FROM pipeline.budgets b
        WHERE b.tenant_id = tn.tenant_id AND (b.stage IS NULL OR b.stage = tn.type)
          AND pipeline.tenant_usage(b.tenant_id, b.stage, b.counter,
                                    date_trunc(b.per, now(), 'UTC')) >= b.budget_limit
    )
    UNION ALL
    SELECT t.type, NULL, head.priority, head.run_after, head.id, NULL, NULL, 1, NULL, 0
    FROM unnest(p_types) AS t(type)
    CROSS JOIN LATERAL (
        SELECT j.priority, j.run_after, j.id FROM pipeline.active_jobs j
        WHERE j.status = 'queued' AND j.type = t.type AND j.tenant_id IS NULL
          AND j.run_after <= now()
        ORDER BY j.priority DESC, j.run_after, j.id
        LIMIT 1
    ) AS head
) AS g
-- A pair at its cap is left out here, without taking its lock (a write): a tenant paused or
-- full with a huge backlog costs the claim two index probes, no more. A stale count can only
-- leave out a pair whose slot has just been freed, until the next claim; the count that
-- decides is read again under the lock (pipeline.lock_slots).
WHERE g.cap IS NULL OR g.running < g.cap
) AS g
ORDER BY g.priority DESC, g.pass NULLS FIRST, g.run_after, g.tenant_id
$$;
