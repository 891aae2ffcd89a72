-- Versioned outputs and reruns (pipeline/reruns.py, pipeline/output_versions.py): a finished
-- run's stage enqueued again as a new generation of the run, beside the outputs of the others.

-- name: rerun_recorded_version
-- The code version the workers run `stage` at, as they recorded it (pipeline.stages): a live
-- worker's first (its heartbeat is recent and its stage_versions names the row's input
-- version), the newest recorded otherwise.
SELECT s.code_version,
       EXISTS (SELECT FROM pipeline.workers AS w
               WHERE w.stage_versions ->> s.name = s.version
                 AND w.last_seen > now() - make_interval(secs => %(alive_s)s)) AS live
FROM pipeline.stages AS s
WHERE s.name = %(stage)s AND s.code_version IS NOT NULL
ORDER BY live DESC, s.updated_at DESC
LIMIT 1;

-- name: rerun_facts
-- What a rerun of `stage` in run `run_id` at `version` must know, in one read: the run (its
-- root job's tenant; its status as pipeline.runs keeps it, or the root's own for a run of one
-- job), whether any of it is queued, running or waiting, how many jobs of the stage its newest
-- generation of them has, the code version of the stage's newest outputs, and a rerun of the
-- same (run, stage, version) made already. A job's generation: the newest of the run's
-- generations whose first job is at most its id (schema.sql, pipeline.run_generations).
WITH root AS (
    SELECT j.id, j.tenant_id, j.status FROM pipeline.jobs AS j
    WHERE j.id = %(run_id)s AND j.root_id IS NULL
),
stage_jobs AS (
    SELECT coalesce((SELECT max(g.generation) FROM pipeline.run_generations AS g
                     WHERE g.run_id = %(run_id)s AND g.first_job_id <= j.id), 0) AS generation
    FROM pipeline.jobs AS j
    WHERE (j.id = %(run_id)s OR j.root_id = %(run_id)s) AND j.type = %(stage)s
)
SELECT root.tenant_id,
       coalesce(r.status, CASE WHEN root.status IN ('queued', 'running') THEN 'running'
                               ELSE root.status END) AS status,
       EXISTS (SELECT FROM pipeline.active_jobs AS a
               WHERE a.id = %(run_id)s OR a.root_id = %(run_id)s) AS active,
       (SELECT count(*) FROM stage_jobs
        WHERE generation = (SELECT max(generation) FROM stage_jobs)) AS stage_jobs,
       (SELECT o.code_version FROM pipeline.outputs AS o
        WHERE o.root_id = %(run_id)s AND o.stage = %(stage)s
        ORDER BY o.generation DESC LIMIT 1) AS stored_version,
       g.generation, g.jobs, g.forced, g.created_at
FROM root
LEFT JOIN pipeline.runs AS r ON r.run_id = root.id
LEFT JOIN pipeline.run_generations AS g
       ON g.run_id = root.id AND g.stage = %(stage)s AND g.code_version = %(version)s;

-- name: rerun_enqueue
-- The rerun itself, one statement: its generation's row, then the stage's jobs of the newest
-- generation of them again, with their payloads, tenants and places in the run (parent, join),
-- under new ids taken before the row is written, so that its first_job_id is the lowest. A
-- fan-out's join counts its children anew, so that what it joined follows as before. The
-- generation row gates the rest: a concurrent rerun of the same run computes the same
-- generation, or the same (stage, version), and waits on the first's insert; once that commits
-- it inserts nothing (ON CONFLICT DO NOTHING), and nor does anything of the run still active
-- when the statement starts. Nothing back then: the caller reads what happened instead.
-- The run's root row is locked too (FOR KEY SHARE, in the history or the kept rows: a finished
-- run's root is in one of them), as every change to a finished run locks a job of it: a prune
-- batch locks the run's jobs FOR UPDATE SKIP LOCKED, so it leaves a run being rerun to a later
-- pass, and a rerun that waits on a batch deleting the run finds the root gone and makes
-- nothing. Without it a rerun read the run from a snapshot taken before the batch committed
-- and enqueued jobs into a run whose outputs and blob references were gone.
WITH root AS MATERIALIZED (
    SELECT h.id FROM (
        SELECT id FROM pipeline.job_history WHERE id = %(run_id)s FOR KEY SHARE
    ) AS h
    UNION ALL
    SELECT k.id FROM (
        SELECT id FROM pipeline.job_history_kept WHERE id = %(run_id)s FOR KEY SHARE
    ) AS k
),
stage_jobs AS MATERIALIZED (
    SELECT j.*, coalesce((SELECT max(g.generation) FROM pipeline.run_generations AS g
                          WHERE g.run_id = %(run_id)s AND g.first_job_id <= j.id), 0) AS gen
    FROM pipeline.jobs AS j
    WHERE (j.id = %(run_id)s OR j.root_id = %(run_id)s) AND j.type = %(stage)s
),
again AS MATERIALIZED (
    SELECT s.*, nextval('pipeline.active_jobs_id_seq') AS new_id
    FROM (SELECT * FROM stage_jobs WHERE gen = (SELECT max(gen) FROM stage_jobs) ORDER BY id) AS s
),
made AS (
    INSERT INTO pipeline.run_generations (run_id, generation, stage, code_version, first_job_id,
                                          jobs, forced)
    SELECT %(run_id)s,
           greatest((SELECT max(generation) FROM pipeline.run_generations
                     WHERE run_id = %(run_id)s),
                    (SELECT max(generation) FROM pipeline.outputs WHERE root_id = %(run_id)s),
                    0) + 1,
           %(stage)s, %(version)s, min(new_id), count(*), %(forced)s
    FROM again
    HAVING count(*) > 0
       AND EXISTS (SELECT FROM root)
       AND NOT EXISTS (SELECT FROM pipeline.active_jobs AS a
                       WHERE a.id = %(run_id)s OR a.root_id = %(run_id)s)
    ON CONFLICT DO NOTHING
    RETURNING generation, jobs, created_at
),
joins AS (
    UPDATE pipeline.joins AS jn
    SET total = c.n, done = 0, failed = 0, then_job_id = NULL, finished_at = NULL
    FROM (SELECT join_id, count(*) AS n FROM again WHERE join_id IS NOT NULL GROUP BY 1) AS c
    WHERE jn.id = c.join_id AND EXISTS (SELECT FROM made)
),
enqueued AS (
    INSERT INTO pipeline.active_jobs (id, type, tenant_id, payload, priority, max_attempts,
                                      lease_seconds, run_after, parent_id, root_id, join_id,
                                      traceparent)
    OVERRIDING SYSTEM VALUE
    -- The root's own job again hangs under the root: a run has one root.
    SELECT new_id, type, tenant_id, payload, priority, max_attempts, lease_seconds, now(),
           coalesce(parent_id, %(run_id)s), %(run_id)s, join_id, traceparent
    FROM again
    WHERE EXISTS (SELECT FROM made)
    ORDER BY new_id
    RETURNING id
)
SELECT made.generation, made.jobs, made.created_at, (SELECT count(*) FROM enqueued) FROM made;

-- name: output_versions
-- A run's output versions: per stage (all when stage is NULL) and generation, the code
-- version that made its outputs, how many there are and when the first was stored, with the
-- rerun that made the generation (NULL for generation 0). By outputs_run.
SELECT o.stage, o.generation, o.code_version, count(*) AS outputs, min(o.created_at),
       g.stage AS rerun_from
FROM pipeline.outputs AS o
LEFT JOIN pipeline.run_generations AS g ON g.run_id = o.root_id AND g.generation = o.generation
WHERE o.root_id = %(run_id)s AND (%(stage)s::text IS NULL OR o.stage = %(stage)s)
GROUP BY o.stage, o.generation, o.code_version, g.stage
ORDER BY min(o.job_id), o.stage, o.generation;

-- name: run_generation_outputs
-- A run's outputs of one stage and generation, each with its part, job and code version.
SELECT part, job_id, code_version, output FROM pipeline.outputs
WHERE root_id = %(run_id)s AND stage = %(stage)s AND generation = %(generation)s
ORDER BY part, job_id;

-- name: run_tenant
-- The run's root job's tenant, and whether there is such a run at all.
SELECT tenant_id FROM pipeline.jobs WHERE id = %(run_id)s AND root_id IS NULL;

-- name: job_output_version
-- The generation and code version of the output a job stored (its first, as job_output).
SELECT generation, code_version, created_at FROM pipeline.outputs
WHERE job_id = %(job_id)s
ORDER BY generation
LIMIT 1;

-- name: run_of_job
-- The run a job belongs to and its tenant: what to say to a caller who named a job inside a
-- run where the run's id was wanted.
SELECT coalesce(root_id, id), tenant_id FROM pipeline.jobs WHERE id = %(job_id)s;
