-- Weighted fair share and budgets per tenant (issue 24, items 2 and 4).
--
-- The claim served (stage, tenant) pairs least recently served first (tenant_slots.served_at),
-- every tenant alike. Now each pair has a virtual time, its pass, which a claim advances by
-- n / weight for the n jobs it took: the claim serves the least pass first, so under contention
-- a tenant's share of the claims follows its weight. The passes live in a table of their own,
-- tenant_passes, apart from the slot counters: a claim locks counters out of order (FOR UPDATE
-- SKIP LOCKED, never waiting), but it waits for the passes' rows, in key order, in one
-- statement at its very end (sql/functions/take_passes.sql), so no increment is ever lost and
-- no two claims wait on each other in a circle.

-- Operators' weights: a tenant's for every stage (stage NULL), or for one stage, which wins.
CREATE TABLE pipeline.tenant_weights (
    tenant_id  text             NOT NULL,
    stage      text,
    weight     double precision NOT NULL
        CONSTRAINT tenant_weights_weight_check CHECK (weight > 0 AND weight <= 1000000),
    updated_at timestamptz      NOT NULL DEFAULT now(),
    CONSTRAINT tenant_weights_key UNIQUE NULLS NOT DISTINCT (tenant_id, stage)
);

-- Per (tenant, stage) served: pass, its virtual time (jobs taken / weight, plus where it
-- (re)joined); floor, the least pass among the stage's pairs with work that the claim which
-- last advanced it saw (the claim's order starts a pair that (re)joins there: no credit from
-- idleness, pipeline.claim_groups); weight, tenant_weights' as it applies to the pair, copied
-- here so that the claim reads it with the pass (`pipeline tenants set-weight` writes both);
-- taken, the jobs claims took since the row was made.
-- A row exists while the pair is served: the slot repair removes idle pairs' rows.
CREATE TABLE pipeline.tenant_passes (
    tenant_id text             NOT NULL,
    stage     text             NOT NULL,
    pass      double precision,
    floor     double precision NOT NULL DEFAULT 0,
    weight    double precision NOT NULL DEFAULT 1,
    taken     bigint           NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, stage)
);
ALTER TABLE pipeline.tenant_passes SET (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.01);

-- The order the passes replace.
ALTER TABLE pipeline.tenant_slots DROP COLUMN served_at;

-- Budgets: a tenant's usage of one counter (or its cost in money, counter 'cost') per UTC day or
-- month, for every stage (stage NULL) or one. At warn x budget_limit an alert; at the limit the
-- tenant's claims of the stages it covers stop until a new period or a higher limit.
CREATE TABLE pipeline.budgets (
    tenant_id    text             NOT NULL,
    stage        text,
    counter      text             NOT NULL,
    per          text             NOT NULL
        CONSTRAINT budgets_per_check CHECK (per IN ('day', 'month')),
    budget_limit double precision NOT NULL
        CONSTRAINT budgets_limit_check CHECK (budget_limit >= 0),
    warn         double precision NOT NULL DEFAULT 0.8
        CONSTRAINT budgets_warn_check CHECK (warn > 0 AND warn <= 1),
    updated_at   timestamptz      NOT NULL DEFAULT now(),
    CONSTRAINT budgets_key UNIQUE NULLS NOT DISTINCT (tenant_id, stage, counter, per)
);

-- claim_groups returns each group's weight and its stage's floor besides the group.
DROP FUNCTION IF EXISTS pipeline.claim_groups(text[], text[], integer[]);
