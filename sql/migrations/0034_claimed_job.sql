-- pipeline.claim and pipeline.claim_take return one named type (schema.sql's
-- pipeline.claimed_job) instead of each spelling the same columns (0033): a result type
-- CREATE OR REPLACE cannot change, so both go and are made again from their files.
CREATE TYPE pipeline.claimed_job AS (
    id bigint, type text, tenant_id text, payload jsonb, priority smallint, attempts integer,
    max_attempts integer, lease_seconds integer, parent_id bigint, root_id bigint, claims integer,
    suspect boolean, traceparent text
);
DROP FUNCTION IF EXISTS pipeline.claim(text[], integer, uuid, text[], integer[]);
DROP FUNCTION IF EXISTS pipeline.claim_take(bigint[], bigint[], boolean, uuid);
