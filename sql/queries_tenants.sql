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
