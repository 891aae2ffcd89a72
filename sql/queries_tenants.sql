-- Per-tenant caps and the slot counters behind them (see pipeline.claim in sql/functions/).

-- name: repair_slots
-- One batch of the repair, its own short transaction: the pairs after the previous batch's
-- last, each recounted under its row lock (a claim in flight is never miscounted) and removed
-- once idle.
SELECT tenant_id, stage, was, counted, removed
FROM pipeline.repair_slots(%(after_tenant)s, %(after_stage)s, %(limit)s);

-- name: set_tenant_cap
INSERT INTO pipeline.tenant_caps (tenant_id, stage, cap) VALUES (%(tenant_id)s, %(stage)s, %(cap)s)
ON CONFLICT (tenant_id, stage) DO UPDATE SET cap = excluded.cap, updated_at = now();

-- name: clear_tenant_cap
DELETE FROM pipeline.tenant_caps WHERE tenant_id = %(tenant_id)s AND stage = %(stage)s
RETURNING cap;

-- name: tenant_caps
-- Every (tenant, stage) with a cap or with slots in use (pipeline.tenant_load), by tenant and
-- stage; code defaults are the caller's to add.
SELECT tenant_id, stage, cap, running, queued
FROM pipeline.tenant_load
WHERE (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
ORDER BY tenant_id, stage
LIMIT %(limit)s;

-- name: tenants_queued
-- Queued jobs per tenant, the longest backlog first: reads the queued rows through jobs_ready,
-- as pipeline.stage_counts does, so it costs the backlog, never the finished rows.
SELECT tenant_id, count(*) AS queued
FROM pipeline.jobs
WHERE status = 'queued' AND tenant_id IS NOT NULL
  AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
GROUP BY tenant_id
ORDER BY queued DESC, tenant_id
LIMIT %(limit)s;

-- name: tenants_noisiest
-- The tenants that enqueued most in the last hour, with how many of those jobs failed: the
-- BRIN index jobs_created reads the last hour's blocks alone.
SELECT tenant_id,
       count(*) AS enqueued_1h,
       count(*) FILTER (WHERE status = 'failed') AS failed_1h,
       count(*) FILTER (WHERE status IN ('queued', 'running')) AS pending
FROM pipeline.jobs
WHERE created_at >= now() - interval '1 hour' AND tenant_id IS NOT NULL
  AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
GROUP BY tenant_id
ORDER BY enqueued_1h DESC, tenant_id
LIMIT %(limit)s;

-- name: set_tenant_weight
-- stage NULL: the tenant's weight for every stage; a stage's own weight wins over it.
INSERT INTO pipeline.tenant_weights (tenant_id, stage, weight)
VALUES (%(tenant_id)s, %(stage)s, %(weight)s)
ON CONFLICT (tenant_id, stage) DO UPDATE SET weight = excluded.weight, updated_at = now();

-- name: clear_tenant_weight
DELETE FROM pipeline.tenant_weights
WHERE tenant_id = %(tenant_id)s AND stage IS NOT DISTINCT FROM %(stage)s
RETURNING weight;

-- name: apply_tenant_weights
-- After a weight is set or cleared, in the same transaction: the copy each of the tenant's pairs
-- (of the stage, if one is named) keeps beside its pass, which the claim reads. Every pair with
-- work has a counter row (pipeline.add_slots), so a pair the claim may serve gets its row here,
-- or has it already; a claim's new row for one not committed yet is waited for, and then
-- updated. In key order, as the claims take these rows (sql/functions/take_passes.sql).
INSERT INTO pipeline.tenant_passes (tenant_id, stage, weight)
SELECT k.tenant_id, k.stage,
       coalesce((SELECT w.weight FROM pipeline.tenant_weights w
                 WHERE w.tenant_id = k.tenant_id AND (w.stage = k.stage OR w.stage IS NULL)
                 ORDER BY w.stage NULLS LAST LIMIT 1), 1)
FROM (
    SELECT s.tenant_id, s.stage FROM pipeline.tenant_slots s
    WHERE s.tenant_id = %(tenant_id)s AND (%(stage)s::text IS NULL OR s.stage = %(stage)s)
    UNION
    SELECT p.tenant_id, p.stage FROM pipeline.tenant_passes p
    WHERE p.tenant_id = %(tenant_id)s AND (%(stage)s::text IS NULL OR p.stage = %(stage)s)
) AS k
ORDER BY k.tenant_id, k.stage
ON CONFLICT (tenant_id, stage) DO UPDATE SET weight = excluded.weight;

-- name: tenant_weights
-- The weights operators set, by tenant, the tenant's own (every stage) before its stages'.
-- total counts every row beyond the limit.
SELECT tenant_id, stage, weight, count(*) OVER () AS total
FROM pipeline.tenant_weights
WHERE (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
ORDER BY tenant_id, stage NULLS FIRST
LIMIT %(limit)s;
