-- Each run's status and counts (pipeline.runs), kept by the statements that change its jobs:
-- jobs entering pipeline.active_jobs (enqueued, a join's next stage, a retry moving one back),
-- moving into pipeline.job_history (done, failed, cancelled), or leaving the history (a retry,
-- a prune). Statement-level, over the transition table `changed`: a statement touching a
-- hundred jobs of a run updates its row once. Queued, running and waiting jobs count alike
-- (`active`), so the claim, heartbeats and retries that stay queued change nothing here; a job
-- entering or leaving 'waiting' moves the run's `waiting` count (count_waits.sql).
--
-- A run gets its row when its first descendant is enqueued: a job alone (most of a drain) costs
-- a probe of the primary key per statement, never a row. That row is counted once, from its
-- root, its finished descendants and the ones the statement inserted; from there on it moves
-- by the statement's deltas only. Two
-- transactions making the same run's row at once: the second waits on the first's insert and
-- adds its own jobs to it (ON CONFLICT). Rows are locked in run order, so statements sharing
-- runs never wait on each other in a circle here.
--
-- A delete from the history counts its jobs out of their runs' finished counts; a retry's
-- insert into active_jobs, in the same statement, counts them back in as active. A run whose
-- counts all reach zero was pruned whole: its row goes. Should a retry's delete be counted
-- before its insert and empty a run that way, the insert makes the row again from the jobs.
CREATE OR REPLACE FUNCTION pipeline.count_runs() RETURNS trigger
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
-- Its statements planned once per connection, as every statement trigger of the jobs' tables
-- is: a PL/pgSQL statement is planned afresh on its first five runs in a session before it keeps
-- a generic plan, and these run once per statement that enqueues or finishes jobs, so a fresh
-- worker's acknowledger (about six batches of a 20,000-job drain in a fleet of sixteen) or an
-- application's connection that enqueues a few jobs planned every run: 0.75 ms of the backend's
-- CPU a batch (docs/measurements.md, 2026-12-04 (an)). The generic plan is the one they keep.
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    IF TG_TABLE_NAME = 'active_jobs' THEN
        WITH n AS (
            SELECT coalesce(root_id, id) AS run_id, count(*) AS jobs
            FROM changed GROUP BY 1
        ),
        locked AS (
            SELECT r.run_id FROM pipeline.runs AS r JOIN n ON n.run_id = r.run_id
            ORDER BY r.run_id
            FOR NO KEY UPDATE OF r
        )
        UPDATE pipeline.runs AS r
        SET active = r.active + n.jobs,
            status = pipeline.run_status(r.active + n.jobs, r.failed, r.cancelled, r.waiting),
            finished_at = CASE WHEN pipeline.run_status(r.active + n.jobs, r.failed, r.cancelled,
                                                        r.waiting) IN ('running', 'waiting')
                               THEN NULL ELSE r.finished_at END
        FROM n
        WHERE r.run_id = n.run_id AND r.run_id IN (SELECT run_id FROM locked);
        -- Most statements start no run's row (a job alone, or more jobs of a run that has
        -- one): they stop here. The INSERT below names the history, so merely running it locks
        -- every one of the history's partitions and their indexes (766 relations at 108 days),
        -- which made a lone job's enqueue cost 0.35-0.44 ms instead of 0.10. The test is the
        -- INSERT's own choice of runs (`m` below), which then has none to insert.
        IF NOT EXISTS (SELECT FROM changed AS ch
                       WHERE ch.root_id IS NOT NULL
                         AND NOT EXISTS (SELECT FROM pipeline.runs AS x
                                         WHERE x.run_id = ch.root_id)) THEN
            RETURN NULL;
        END IF;
        -- The runs that have no row yet: a root's first descendants. Every job that enters
        -- active_jobs passes here, so a run without a row has no queued, running or waiting
        -- descendant but those this statement inserted: they are counted from `changed`, and
        -- only the root and the finished descendants are read (rows put into the history by
        -- hand have no row: a test's, a bulk load's). Reading every job of the run instead
        -- made enqueueing runs of 100 cost about twice what the same jobs alone do. The root
        -- is found by primary key, in active_jobs first (a root enqueues its children while
        -- it runs), and in the history's partitions only when it is not there.
        INSERT INTO pipeline.runs AS r (run_id, tenant_id, status, active, done, failed,
                                        cancelled, blocked_job_id, blocked_reason, created_at,
                                        finished_at, waiting)
        SELECT m.run_id, c.tenant_id,
               pipeline.run_status(c.active, c.failed, c.cancelled, c.waiting),
               c.active, c.done, c.failed, c.cancelled, c.blocked_job_id, c.blocked_reason,
               coalesce(c.created_at, now()),
               CASE WHEN pipeline.run_status(c.active, c.failed, c.cancelled, c.waiting)
                         NOT IN ('running', 'waiting')
                    THEN now() END,
               c.waiting
        FROM (SELECT root_id AS run_id, count(*) AS jobs,
                     count(*) FILTER (WHERE status = 'waiting') AS waiting
              FROM changed AS ch
              WHERE ch.root_id IS NOT NULL
                AND NOT EXISTS (SELECT FROM pipeline.runs AS x WHERE x.run_id = ch.root_id)
              GROUP BY 1
              ORDER BY 1) AS m
        CROSS JOIN LATERAL (
            SELECT (array_agg(j.tenant_id) FILTER (WHERE j.id = m.run_id))[1] AS tenant_id,
                   min(j.created_at) FILTER (WHERE j.id = m.run_id) AS created_at,
                   count(*) FILTER (WHERE j.status IN ('queued', 'running', 'waiting'))
                       + m.jobs AS active,
                   count(*) FILTER (WHERE j.status = 'waiting')
                       + m.waiting AS waiting,
                   count(*) FILTER (WHERE j.status = 'done') AS done,
                   count(*) FILTER (WHERE j.status = 'failed') AS failed,
                   count(*) FILTER (WHERE j.status = 'cancelled') AS cancelled,
                   (array_agg(j.id ORDER BY j.finished_at, j.id)
                        FILTER (WHERE j.status IN ('failed', 'cancelled')))[1] AS blocked_job_id,
                   (array_agg(j.last_error ORDER BY j.finished_at, j.id)
                        FILTER (WHERE j.status IN ('failed', 'cancelled')))[1] AS blocked_reason
            FROM ((SELECT id, tenant_id, created_at, status, finished_at, last_error
                   FROM pipeline.jobs WHERE id = m.run_id LIMIT 1)
                  UNION ALL
                  SELECT id, tenant_id, created_at, status, finished_at, last_error
                  FROM pipeline.job_history WHERE root_id = m.run_id
                  UNION ALL
                  SELECT id, tenant_id, created_at, status, finished_at, last_error
                  FROM pipeline.job_history_kept WHERE root_id = m.run_id) AS j
        ) AS c
        ON CONFLICT (run_id) DO UPDATE
        SET active = r.active + (SELECT count(*) FROM changed AS ch WHERE ch.root_id = r.run_id),
            status = pipeline.run_status(
                r.active + (SELECT count(*) FROM changed AS ch WHERE ch.root_id = r.run_id),
                r.failed, r.cancelled, r.waiting),
            finished_at = CASE WHEN r.failed + r.cancelled = 0 THEN NULL
                               ELSE r.finished_at END;
        RETURN NULL;
    END IF;

    IF TG_OP = 'INSERT' THEN
        -- Jobs finished: out of active, into their outcome's count. The first job to fail or
        -- be cancelled is what blocks the run.
        WITH n AS (
            SELECT coalesce(root_id, id) AS run_id, count(*) AS jobs,
                   count(*) FILTER (WHERE status = 'done') AS done,
                   count(*) FILTER (WHERE status = 'failed') AS failed,
                   count(*) FILTER (WHERE status = 'cancelled') AS cancelled,
                   (array_agg(id ORDER BY id) FILTER (WHERE status <> 'done'))[1] AS blocked_id,
                   (array_agg(last_error ORDER BY id) FILTER (WHERE status <> 'done'))[1]
                       AS blocked_reason
            FROM changed GROUP BY 1
        ),
        locked AS (
            SELECT r.run_id FROM pipeline.runs AS r JOIN n ON n.run_id = r.run_id
            ORDER BY r.run_id
            FOR NO KEY UPDATE OF r
        )
        UPDATE pipeline.runs AS r
        SET active = r.active - n.jobs,
            done = r.done + n.done,
            failed = r.failed + n.failed,
            cancelled = r.cancelled + n.cancelled,
            blocked_job_id = coalesce(r.blocked_job_id, n.blocked_id),
            blocked_reason = CASE WHEN r.blocked_job_id IS NULL THEN n.blocked_reason
                                  ELSE r.blocked_reason END,
            status = pipeline.run_status(r.active - n.jobs, r.failed + n.failed,
                                         r.cancelled + n.cancelled, r.waiting),
            finished_at = CASE WHEN pipeline.run_status(r.active - n.jobs, r.failed + n.failed,
                                                        r.cancelled + n.cancelled, r.waiting)
                                    IN ('running', 'waiting')
                               THEN NULL ELSE coalesce(r.finished_at, now()) END
        FROM n
        WHERE r.run_id = n.run_id AND r.run_id IN (SELECT run_id FROM locked);
        RETURN NULL;
    END IF;

    -- Jobs left the history (or its kept rows): a retry, or a prune of their run.
    WITH n AS (
        SELECT coalesce(root_id, id) AS run_id,
               count(*) FILTER (WHERE status = 'done') AS done,
               count(*) FILTER (WHERE status = 'failed') AS failed,
               count(*) FILTER (WHERE status = 'cancelled') AS cancelled,
               array_agg(id) AS ids
        FROM changed GROUP BY 1
    ),
    locked AS (
        SELECT r.run_id FROM pipeline.runs AS r JOIN n ON n.run_id = r.run_id
        ORDER BY r.run_id
        FOR NO KEY UPDATE OF r
    )
    UPDATE pipeline.runs AS r
    SET done = r.done - n.done,
        failed = r.failed - n.failed,
        cancelled = r.cancelled - n.cancelled,
        -- The blocking job left: the next one that blocks (if any) is looked up below.
        blocked_job_id = CASE WHEN r.blocked_job_id = ANY(n.ids) THEN NULL
                              ELSE r.blocked_job_id END,
        blocked_reason = CASE WHEN r.blocked_job_id = ANY(n.ids) THEN NULL
                              ELSE r.blocked_reason END,
        status = pipeline.run_status(r.active, r.failed - n.failed, r.cancelled - n.cancelled,
                                     r.waiting),
        finished_at = CASE WHEN pipeline.run_status(r.active, r.failed - n.failed,
                                                    r.cancelled - n.cancelled, r.waiting)
                                IN ('running', 'waiting')
                           THEN NULL ELSE r.finished_at END
    FROM n
    WHERE r.run_id = n.run_id AND r.run_id IN (SELECT run_id FROM locked);
    DELETE FROM pipeline.runs AS r
    WHERE r.run_id IN (SELECT coalesce(root_id, id) FROM changed)
      AND r.active = 0 AND r.done = 0 AND r.failed = 0 AND r.cancelled = 0;
    -- Rare (a retry of the job that blocked a run that has another failed job): read the run.
    UPDATE pipeline.runs AS r
    SET blocked_job_id = b.id, blocked_reason = b.last_error
    FROM (SELECT DISTINCT coalesce(root_id, id) AS run_id FROM changed) AS m
    CROSS JOIN LATERAL (
        SELECT j.id, j.last_error FROM pipeline.jobs AS j
        WHERE (j.id = m.run_id OR j.root_id = m.run_id)
          AND j.status IN ('failed', 'cancelled')
        ORDER BY j.finished_at, j.id
        LIMIT 1
    ) AS b
    WHERE r.run_id = m.run_id AND r.blocked_job_id IS NULL
      AND (r.failed > 0 OR r.cancelled > 0);
    RETURN NULL;
END
$$;
