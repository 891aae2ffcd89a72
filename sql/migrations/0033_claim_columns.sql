-- pipeline.claim and pipeline.claim_take return the columns the worker reads instead of the
-- whole row (sql/functions/claim.sql): a result type CREATE OR REPLACE cannot change.
DROP FUNCTION IF EXISTS pipeline.claim(text[], integer, uuid, text[], integer[]);
DROP FUNCTION IF EXISTS pipeline.claim_take(bigint[], bigint[], boolean, uuid);
