-- The claim's taking (pipeline.claim): the jobs p_ids that its picking locked, marked running
-- for worker p_worker, each holding a tenant's slot when in p_capped_ids (p_all_capped: all of
-- them are, and none is looked up in the array). Every one of them is locked by this
-- transaction and still queued, so every one of them is claimed.
--
-- By primary key, whatever the planner makes of the table's size: the claim's plans are
-- generic and kept for the connection (plan_cache_mode in claim.sql), so this statement's plan
-- is made by a connection's first claim that takes a job, and kept. Made on a near-empty
-- table (a worker's first job on a quiet queue) it read the whole table, 20 ms a claim with
-- 20,000 jobs queued, until an ANALYZE of the table replaced it; hence enable_seqscan off
-- here, which leaves the planner the index alone (a join with the ids would hash the whole
-- table, and is not written).
CREATE OR REPLACE FUNCTION pipeline.claim_take(
    p_ids bigint[], p_capped_ids bigint[], p_all_capped boolean, p_worker uuid
) RETURNS SETOF pipeline.claimed_job
LANGUAGE sql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
AS $$
UPDATE pipeline.active_jobs AS j
SET status = 'running', attempts = j.attempts + 1, claims = j.claims + 1,
    leased_until = now() + make_interval(secs => j.lease_seconds),
    worker_id = p_worker, started_at = now(),
    holds_slot = p_all_capped OR j.id = ANY (p_capped_ids)
WHERE j.id = ANY (p_ids)
RETURNING j.id, j.type, j.tenant_id, j.payload, j.priority, j.attempts, j.max_attempts,
    j.lease_seconds, j.parent_id, j.root_id, j.claims, j.suspect, j.traceparent
$$;
