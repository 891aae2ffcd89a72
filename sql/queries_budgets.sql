-- Budgets: a tenant's usage of a counter (or its cost, counter 'cost') per UTC day or month,
-- read through pipeline.tenant_usage (the usage rollups). The claim leaves a tenant's stages
-- past a budget unclaimed (sql/functions/claim_groups.sql).

-- name: set_budget
-- stage NULL: every stage of the tenant, counted together.
INSERT INTO pipeline.budgets (tenant_id, stage, counter, per, budget_limit, warn)
VALUES (%(tenant_id)s, %(stage)s, %(counter)s, %(per)s, %(limit)s, %(warn)s)
ON CONFLICT (tenant_id, stage, counter, per)
DO UPDATE SET budget_limit = excluded.budget_limit, warn = excluded.warn, updated_at = now();

-- name: clear_budget
-- counter and per NULL: every budget of the tenant for that stage (NULL: the tenant's own).
DELETE FROM pipeline.budgets
WHERE tenant_id = %(tenant_id)s AND stage IS NOT DISTINCT FROM %(stage)s
  AND (%(counter)s::text IS NULL OR counter = %(counter)s)
  AND (%(per)s::text IS NULL OR per = %(per)s)
RETURNING counter, per;

-- name: budgets
-- Every budget with its use in the current period (from the start of the UTC day or month):
-- the exhausted ones (which stop the tenant's claims) first, then those past their warning
-- level, then by tenant, the tenant's own (every stage) before its stages'. total counts every
-- row beyond the limit.
SELECT tenant_id, stage, counter, per, budget_limit, warn, used, state, count(*) OVER () AS total
FROM (
    SELECT b.tenant_id, b.stage, b.counter, b.per, b.budget_limit, b.warn, u.used,
           CASE WHEN u.used >= b.budget_limit THEN 'exhausted'
                WHEN u.used >= b.warn * b.budget_limit THEN 'warning'
                ELSE 'ok' END AS state
    FROM pipeline.budgets b
    CROSS JOIN LATERAL (
        SELECT pipeline.tenant_usage(b.tenant_id, b.stage, b.counter,
                                     date_trunc(b.per, now(), 'UTC')) AS used
    ) AS u
    WHERE (%(tenant)s::text IS NULL OR b.tenant_id = %(tenant)s)
) AS b
ORDER BY state = 'ok', state = 'warning', tenant_id, stage NULLS FIRST, counter, per
LIMIT %(limit)s;
