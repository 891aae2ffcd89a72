-- Durable waits (pipeline.waits): a stage's run ending in a wait, the signal or the deadline
-- that resumes it, and the readers of open waits (pipeline/waits.py, pipeline/admin/waits.py,
-- pipeline/maintenance/waits.py).
--
-- A wait row is open (resolved_at NULL) exactly while its job's status is 'waiting' on it. Every
-- statement that resolves one locks the job's row first, then resolves the row WHERE it is still
-- open, and moves the job out of 'waiting' only if that resolved it: the job row's lock puts
-- concurrent signals, the timeout and a cancel in one order, and the open-row test, re-read on
-- the newest version of the row once that lock is had, lets exactly one of them resolve it.

-- name: wait
-- The fenced write of a run that ended in ctx.wait_for: the job leaves running (its slot goes
-- back through jobs_free_slot, its lease and worker are cleared) for 'waiting', its attempt is
-- refunded (a resume must never fail a job for having waited), the attempt's row says
-- 'waiting', and the wait is recorded, open, with its deadline. A wait of the same name that
-- was cancelled (the job was retried after a cancel) opens again. So does one whose signalled
-- answer the stage's model refused (%(refusal)s set: ctx.wait_for): the refusal is the job's
-- last_error and the attempt's error, and the wait keeps its first deadline (and age) while
-- that is still ahead; past it, the person who answered wrongly gets the stage's full timeout
-- again, from now, rather than a wait the timeout service would end at once.
WITH held AS (
    SELECT j AS job, j.id, j.type, j.tenant_id, coalesce(j.root_id, j.id) AS run_id
    FROM pipeline.active_jobs AS j
    WHERE j.id = %(id)s AND j.claims = %(claims)s AND j.status IS NOT DISTINCT FROM 'running'
    FOR NO KEY UPDATE
),
parked AS (
    UPDATE pipeline.active_jobs AS j
    SET status = 'waiting',
        attempts = j.attempts - 1,
        leased_until = NULL,
        worker_id = NULL,
        last_error = %(refusal)s::text
    FROM held
    WHERE j.id = held.id
    RETURNING j.id
),
recorded AS (
    INSERT INTO pipeline.waits AS w (job_id, name, run_id, tenant_id, stage, schema, proposal,
                                     detail, deadline)
    SELECT id, %(name)s, run_id, tenant_id, type, %(schema)s::jsonb, %(proposal)s::jsonb,
           %(detail)s::jsonb,
           now() + make_interval(secs => %(timeout_s)s::float8)
    FROM held
    ON CONFLICT (job_id, name) DO UPDATE
    SET run_id = EXCLUDED.run_id, tenant_id = EXCLUDED.tenant_id, stage = EXCLUDED.stage,
        schema = EXCLUDED.schema, proposal = EXCLUDED.proposal, detail = EXCLUDED.detail,
        created_at = CASE WHEN %(refusal)s::text IS NOT NULL AND w.deadline > now()
                          THEN w.created_at ELSE now() END,
        deadline = CASE WHEN %(refusal)s::text IS NOT NULL AND w.deadline > now()
                        THEN w.deadline ELSE EXCLUDED.deadline END,
        resolved_at = NULL, resolution = NULL, payload = NULL
),
tried AS (
    -- The attempt as the claim counted it: the refund above is the next claim's to take.
    INSERT INTO pipeline.job_attempts
    SELECT a.*
    FROM held, pipeline.ended_attempt(job, 'waiting', %(refusal)s::text,
                                   %(started)s::float8, %(logs)s,
                                   %(dropped)s, %(wall_s)s::real, %(cpu_s)s::real,
                                   %(usage)s::jsonb) AS a
)
SELECT id FROM parked;

-- name: wait_record
-- What the stage's ctx.wait_for finds of a wait of its job: by the primary key.
SELECT resolution, payload, deadline, created_at, resolved_at
FROM pipeline.waits
WHERE job_id = %(job_id)s AND name = %(name)s;

-- name: signal_targets
-- The waits a signal may be for: those of the run by that name (of the job, when given),
-- open ones first, through waits_run. A tenant, when set, must be the wait's: another tenant's
-- wait is as if it did not exist.
SELECT w.job_id, w.schema, w.resolution, w.resolved_at, w.deadline,
       w.deadline <= now() AS past_deadline
FROM pipeline.waits AS w
WHERE w.run_id = %(run_id)s AND w.name = %(name)s
  AND (%(job_id)s::bigint IS NULL OR w.job_id = %(job_id)s)
  AND (%(tenant)s::text IS NULL OR w.tenant_id = %(tenant)s)
ORDER BY w.resolved_at IS NOT NULL, w.job_id
LIMIT 20;

-- name: signal_run
-- Why a signal found no wait: the run (its root job) as it is, and the names its open waits
-- have. By the primary keys and waits_run.
SELECT j.status, j.root_id,
       ARRAY(SELECT DISTINCT w.name FROM pipeline.waits AS w
             WHERE w.run_id = %(run_id)s AND w.resolved_at IS NULL ORDER BY 1) AS waiting_on,
       (SELECT r.status FROM pipeline.runs AS r WHERE r.run_id = %(run_id)s) AS run_status
FROM pipeline.jobs AS j
WHERE j.id = %(run_id)s AND (%(tenant)s::text IS NULL OR j.tenant_id = %(tenant)s);

-- name: signal
-- Resume one waiting job with the signal's payload (checked against the wait's schema
-- already): lock the job, resolve its wait if it is still open and its deadline not past, and
-- queue the job (now: it has waited enough) only if that resolved it. Zero rows back: another
-- signal, the timeout or a cancel got there first. The job's stage is woken (a requeued job
-- passes no INSERT trigger), when the caller's transaction commits: pg_notify, once for each
-- job queued, in the outer SELECT's FROM. It returns void, a value with nothing to read (and
-- never NULL), so it is no column of the result.
WITH locked AS (
    SELECT id FROM pipeline.active_jobs
    WHERE id = %(job_id)s AND status = 'waiting'
    FOR NO KEY UPDATE
),
resolved AS (
    UPDATE pipeline.waits AS w
    SET resolved_at = now(), resolution = 'signalled', payload = %(payload)s::jsonb
    FROM locked
    WHERE w.job_id = locked.id AND w.name = %(name)s AND w.resolved_at IS NULL
      AND w.deadline > now()
    RETURNING w.job_id
),
queued AS (
    UPDATE pipeline.active_jobs AS j
    SET status = 'queued', run_after = now()
    FROM resolved
    WHERE j.id = resolved.job_id
    RETURNING j.id, j.type
)
SELECT q.id FROM queued AS q, pg_notify('pipeline_jobs', q.type);

-- name: time_out_waits
-- One batch of the timeout service: open waits past their deadline, their jobs locked (SKIP
-- LOCKED: a job a signal or a cancel holds right now is theirs, and this batch's next turn
-- finds it resolved or not), resolved as timed out and their jobs queued, to run again and
-- meet WaitTimedOut at their wait. Oldest deadline first, through waits_due. Their stages are
-- woken as in `signal`.
WITH due AS (
    SELECT job_id, name FROM pipeline.waits
    WHERE resolved_at IS NULL AND deadline <= now()
    ORDER BY deadline
    LIMIT %(limit)s
),
locked AS (
    SELECT j.id FROM pipeline.active_jobs AS j
    WHERE j.id IN (SELECT job_id FROM due) AND j.status = 'waiting'
    ORDER BY j.id
    FOR NO KEY UPDATE OF j SKIP LOCKED
),
resolved AS (
    UPDATE pipeline.waits AS w
    SET resolved_at = now(), resolution = 'timed_out'
    FROM locked
    WHERE w.job_id = locked.id AND w.resolved_at IS NULL AND w.deadline <= now()
    RETURNING w.job_id, w.name
),
queued AS (
    UPDATE pipeline.active_jobs AS j
    SET status = 'queued', run_after = now()
    FROM resolved
    WHERE j.id = resolved.job_id
    RETURNING j.id, j.type, resolved.name
)
SELECT q.id, q.type, q.name FROM queued AS q, pg_notify('pipeline_jobs', q.type);

-- name: waits_open
-- Open waits, oldest first, through waits_open; a tenant and a name narrow them.
SELECT job_id, run_id, tenant_id, stage, name, schema, proposal, detail, created_at, deadline,
       resolved_at, resolution, payload,
       -- Why the model refused the answer signalled last, while the wait is open again for it:
       -- the job's last_error (the `wait` statement clears it on a first wait). By the key.
       (SELECT j.last_error FROM pipeline.active_jobs AS j
        WHERE j.id = w.job_id AND j.status = 'waiting' AND w.resolved_at IS NULL) AS last_refusal
FROM pipeline.waits AS w
WHERE resolved_at IS NULL
  AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
  AND (%(name)s::text IS NULL OR name = %(name)s)
ORDER BY created_at, job_id
LIMIT %(limit)s;

-- name: waits_of_job
-- A job's waits, the open one first, then the latest resolved: by the primary key.
SELECT job_id, run_id, tenant_id, stage, name, schema, proposal, detail, created_at, deadline,
       resolved_at, resolution, payload,
       -- As in waits_open.
       (SELECT j.last_error FROM pipeline.active_jobs AS j
        WHERE j.id = w.job_id AND j.status = 'waiting' AND w.resolved_at IS NULL) AS last_refusal
FROM pipeline.waits AS w
WHERE job_id = %(job_id)s AND (%(name)s::text IS NULL OR name = %(name)s)
  AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
ORDER BY resolved_at IS NOT NULL, resolved_at DESC, created_at DESC
LIMIT 1;

-- name: monitoring_waiting
-- `pipeline status`: open waits per stage and wait name, with the nearest deadline, through
-- waits_due (open rows alone: as many as jobs wait for input, not as many as ever waited).
SELECT stage, name, count(*) AS waiting, min(deadline) AS next_deadline
FROM pipeline.waits
WHERE resolved_at IS NULL AND (%(tenant)s::text IS NULL OR tenant_id = %(tenant)s)
GROUP BY stage, name
ORDER BY stage, name
LIMIT %(limit)s;

-- name: waits_reopen
-- Jobs an operator retried (pg_pipeline.admin.jobs, in the retry's transaction): a wait of
-- theirs that timed out is forgotten, so that the stage waits again, with a fresh deadline,
-- instead of meeting WaitTimedOut once more. A signalled wait keeps its answer. By the
-- primary key.
DELETE FROM pipeline.waits
WHERE job_id = ANY(%(ids)s::bigint[]) AND resolution = 'timed_out';
