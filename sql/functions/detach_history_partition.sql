-- Retention, second step: in the caller's short transaction, under an exclusive lock on the
-- history (taken first, so that nothing changes a row of the day meanwhile: a retry waits, then
-- finds its job kept or gone), the survivors found before (p_survivors) are completed by the
-- runs that gained a queued or running job since (a retry that came first), their rows of the
-- day are copied into pipeline.job_history_kept, and the day is detached. Returns the rows
-- kept, NULL when the day is no partition of the history any more (another pass took it). The
-- caller drops the detached table (pipeline.drop_history_partition) after commit.
--
-- Every worker's finishing statement waits for the exclusive lock while this runs, so the hot
-- table is read only for the jobs whose run can be of the day: a run id (the root's id, or a
-- job's root_id) between the least and the greatest id or root id of the day's rows, two index
-- range scans, instead of a probe of the day per queued or running job (two per job: a
-- backlog of a million was two million probes with the history locked).
CREATE OR REPLACE FUNCTION pipeline.detach_history_partition(
    p_name text, p_survivors bigint[]
) RETURNS bigint
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p_part regclass;
    kept bigint;
    lo bigint;
    hi bigint;
BEGIN
    LOCK TABLE pipeline.job_history IN ACCESS EXCLUSIVE MODE;
    p_part := to_regclass(p_name);
    IF p_part IS NULL OR NOT EXISTS (
        SELECT 1 FROM pg_inherits
        WHERE inhrelid = p_part AND inhparent = 'pipeline.job_history'::regclass
    ) THEN
        RETURN NULL;
    END IF;
    EXECUTE format($q$
        SELECT least((SELECT min(id) FROM %1$s), (SELECT min(root_id) FROM %1$s)),
               greatest((SELECT max(id) FROM %1$s), (SELECT max(root_id) FROM %1$s))
    $q$, p_part)
    INTO lo, hi;
    EXECUTE format($q$
        WITH runs AS (
            SELECT unnest($1) AS run_id
            UNION
            SELECT coalesce(a.root_id, a.id) FROM pipeline.active_jobs a
            WHERE (a.id BETWEEN $2 AND $3 OR a.root_id BETWEEN $2 AND $3)
              AND EXISTS (SELECT 1 FROM %1$s p
                          WHERE p.id = coalesce(a.root_id, a.id)
                             OR p.root_id = coalesce(a.root_id, a.id))
        ),
        copied AS (
            INSERT INTO pipeline.job_history_kept
            SELECT p.* FROM %1$s p JOIN runs ON coalesce(p.root_id, p.id) = runs.run_id
            RETURNING 1
        )
        SELECT count(*) FROM copied
    $q$, p_part)
    INTO kept
    USING p_survivors, lo, hi;
    EXECUTE format('ALTER TABLE pipeline.job_history DETACH PARTITION %s', p_part);
    RETURN kept;
END
$$;
