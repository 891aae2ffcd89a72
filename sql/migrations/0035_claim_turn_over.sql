-- A claim gives its turn back as its dealing ends, before it commits (sql/functions/claim.sql):
-- pipeline.claim_turn now returns the turn it took, a result type CREATE OR REPLACE cannot
-- change, so it goes and is made again from its file.
DROP FUNCTION IF EXISTS pipeline.claim_turn();
