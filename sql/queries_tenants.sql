-- Per-tenant caps and the slot counters behind them (see pipeline_claim in sql/schema.sql).

-- name: repair_slots
-- One pair at a time under its row lock, so a claim in flight is never miscounted.
SELECT tenant_id, stage, was, counted FROM pipeline_repair_slots();

-- name: set_tenant_cap
INSERT INTO tenant_caps (tenant_id, stage, cap) VALUES (%(tenant_id)s, %(stage)s, %(cap)s)
ON CONFLICT (tenant_id, stage) DO UPDATE SET cap = excluded.cap, updated_at = now();

-- name: clear_tenant_cap
DELETE FROM tenant_caps WHERE tenant_id = %(tenant_id)s AND stage = %(stage)s
RETURNING cap;

-- name: tenant_caps
-- Every (tenant, stage) with a cap or with slots in use; code defaults are the caller's to add.
SELECT coalesce(c.tenant_id, s.tenant_id) AS tenant_id, coalesce(c.stage, s.stage) AS stage,
       c.cap, coalesce(s.running, 0) AS running,
       (SELECT count(*) FROM jobs j
        WHERE j.status = 'queued' AND j.type = coalesce(c.stage, s.stage)
          AND j.tenant_id = coalesce(c.tenant_id, s.tenant_id)) AS queued
FROM tenant_caps c
FULL JOIN tenant_slots s ON s.tenant_id = c.tenant_id AND s.stage = c.stage
WHERE (%(tenant_id)s::text IS NULL OR coalesce(c.tenant_id, s.tenant_id) = %(tenant_id)s)
  AND (c.cap IS NOT NULL OR s.running > 0)
ORDER BY 1, 2
LIMIT %(limit)s;
