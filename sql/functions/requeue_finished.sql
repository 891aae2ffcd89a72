-- Failed or cancelled jobs back in the queue: the jobs `ids` whose status is one of `statuses`
-- move from the history (or its kept rows) back into pipeline.active_jobs under the same id,
-- in one statement, with at least one attempt left; returns each one's id and stage. The one
-- place that spells that move: both retries (queries_admin.sql: retry, one job by id, and
-- jobs_retry_failed, a batch its query picked) call it, so that the two cannot come to
-- requeue a job differently. An id that is no longer there, or no longer in such a status
-- (pruned, retried already), is left out.
--
-- A job keeps its attempts, claims (the fence goes on counting), last error and counters; what
-- a claim or its finish set is cleared: lease, worker, finish time, tenant slot. Its rate-limit
-- charges are not restored: the history does not keep them (docs/limits.md).
--
-- VOLATILE: its statement takes a snapshot of its own when it is called, after the locks its
-- DELETEs wait for, as a statement of the caller's own would: a retry that waited for a prune
-- finds the job it pruned gone, or the row that prune copied into the kept rows, and takes it
-- from there. The triggers on the history (the join's count, the runs' and the rollups') fire
-- for this statement's rows, as they would for the caller's.
CREATE OR REPLACE FUNCTION pipeline.requeue_finished(p_ids bigint[], p_statuses text[])
RETURNS TABLE (id bigint, type text)
LANGUAGE sql VOLATILE
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM pipeline.job_history AS h
        WHERE h.id = ANY (p_ids) AND h.status = ANY (p_statuses)
        RETURNING h.*
    ),
    gone_kept AS (
        DELETE FROM pipeline.job_history_kept AS h
        WHERE h.id = ANY (p_ids) AND h.status = ANY (p_statuses)
        RETURNING h.*
    ),
    back AS (
        SELECT * FROM gone UNION ALL SELECT * FROM gone_kept
    )
    INSERT INTO pipeline.active_jobs AS a (
        id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after,
        leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id,
        join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases,
        holds_slot, traceparent)
    OVERRIDING SYSTEM VALUE
    SELECT b.id, b.type, b.tenant_id, b.payload, b.priority, 'queued', b.attempts,
           greatest(b.max_attempts, b.attempts + 1), now(), NULL, b.lease_seconds, NULL,
           b.last_error, b.dedup_key, b.parent_id, b.root_id, b.join_id, b.created_at,
           b.started_at, NULL, b.claims, b.suspect, b.crash_reclaims, b.releases, false,
           b.traceparent
    FROM back AS b
    RETURNING a.id, a.type
$$;
