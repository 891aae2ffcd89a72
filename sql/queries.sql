-- Every runtime query of pg-pipeline, parsed once by pipeline/queries.py.
-- A query starts at its "-- name: NAME" line; the comment lines after it say why it is shaped so.
-- Every write after a claim carries the fence: id, claims and status = 'running'. claims counts
-- claims and never goes down (attempts can: a crash reclaim refunds one), so it names one claim.
-- Zero rows back means the lease was lost, and the caller must write nothing else.
-- Queued and running jobs live in pipeline.active_jobs. A job finishes by moving: one statement
-- deletes its row there (fenced) and inserts it into pipeline.job_history with its final
-- status and finish time, so that no reader ever finds it in neither table or in both. The
-- DELETE returns the whole row (`RETURNING j AS job`), and pipeline.finished_job (and, for the
-- attempt's row, pipeline.ended_attempt) maps it: the history's columns are spelled there alone.
-- The DELETE gives its tenant slot back (the statement trigger jobs_free_deleted_slots, once for
-- a whole batch), and the INSERT counts it in its join (job_history_join_finished). Should the
-- day's partition be missing (SQLSTATE 23514), pipeline/store.py makes it and runs the
-- statement once more.
-- The fence spells the status test `status IS NOT DISTINCT FROM 'running'` (status is NOT
-- NULL, so it means `=`) so that the planner cannot read it as jobs_running's predicate: with
-- statistics that say few jobs run, it would walk that index, every entry a claim left since
-- the last vacuum included, instead of looking the ids up. On a table of a million finished
-- rows (vacuumed seldom) that made each acknowledgement ten times dearer.

-- name: enqueue
-- A repeated dedup key is not an error: the caller gets the job that already exists. A key is
-- held in pipeline.dedup_keys, for as long as its job is kept (queued, running, or finished
-- until retention deletes its run): the key goes in first, under the id the job is to take,
-- and the job only when the key was new. A job without a key skips that (`key` is empty and
-- the WHERE holds).
WITH key AS (
    INSERT INTO pipeline.dedup_keys (type, dedup_key, job_id)
    SELECT %(type)s, %(dedup_key)s, nextval('pipeline.active_jobs_id_seq')
    WHERE %(dedup_key)s::text IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING job_id
)
INSERT INTO pipeline.active_jobs (id, type, tenant_id, payload, priority, max_attempts,
                                  lease_seconds, run_after, dedup_key, parent_id, root_id, join_id,
                                  traceparent, limits)
OVERRIDING SYSTEM VALUE
SELECT coalesce((SELECT job_id FROM key), nextval('pipeline.active_jobs_id_seq')), %(type)s,
       %(tenant_id)s, %(payload)s::jsonb, %(priority)s, %(max_attempts)s, %(lease_seconds)s,
       coalesce(%(run_after)s, now()), %(dedup_key)s, %(parent_id)s, %(root_id)s, %(join_id)s,
       %(traceparent)s, %(limits)s::jsonb
WHERE %(dedup_key)s::text IS NULL OR EXISTS (SELECT FROM key)
RETURNING id;

-- name: find_by_dedup_key
SELECT job_id FROM pipeline.dedup_keys WHERE type = %(type)s AND dedup_key = %(dedup_key)s;

-- name: enqueue_many
-- One statement for the whole batch. A column that varies travels as a binary array (`types`),
-- one every row shares as a single value (`type`) beside a NULL array: dumping an array cost
-- psycopg ~0.45 ms per thousand values, a third of a bulk call's own time, and in a batch most
-- columns are one value (the stage's defaults). coalesce() takes whichever was sent; a varying
-- column's NULLs stay NULL, since its single value is then NULL too. The payloads travel as one
-- JSON array: sent as a text[] of JSON, each element went through array and jsonb input parsing,
-- which cost more than the insert. ROWS FROM zips the arrays row by row and pads NULL ones.
-- Dedup keys as in `enqueue`: every row takes its id first; the keys go in, and the rows
-- whose key was new or who have none.
WITH b AS MATERIALIZED (
    SELECT nextval('pipeline.active_jobs_id_seq') AS id,
           coalesce(b.type, %(type)s::text) AS type,
           coalesce(b.tenant_id, %(tenant_id)s::text) AS tenant_id, b.payload,
           coalesce(b.priority, %(priority)s::smallint) AS priority,
           coalesce(b.max_attempts, %(max_attempts)s::integer) AS max_attempts,
           coalesce(b.lease_seconds, %(lease_seconds)s::integer) AS lease_seconds,
           coalesce(b.run_after, %(run_after)s::timestamptz, now()) AS run_after,
           coalesce(b.dedup_key, %(dedup_key)s::text) AS dedup_key,
           coalesce(b.parent_id, %(parent_id)s::bigint) AS parent_id,
           coalesce(b.root_id, %(root_id)s::bigint) AS root_id,
           coalesce(b.join_id, %(join_id)s::bigint) AS join_id,
           coalesce(b.traceparent, %(traceparent)s::text) AS traceparent,
           coalesce(b.limits, %(limits)s::text)::jsonb AS limits
    FROM ROWS FROM (unnest(%(types)b::text[]), unnest(%(tenant_ids)b::text[]),
                    jsonb_array_elements(%(payloads)s::jsonb), unnest(%(priorities)b::smallint[]),
                    unnest(%(max_attempts_each)b::integer[]),
                    unnest(%(lease_seconds_each)b::integer[]),
                    unnest(%(run_afters)b::timestamptz[]), unnest(%(dedup_keys)b::text[]),
                    unnest(%(parent_ids)b::bigint[]), unnest(%(root_ids)b::bigint[]),
                    unnest(%(join_ids)b::bigint[]), unnest(%(traceparents)b::text[]),
                    unnest(%(limits_each)b::text[]))
         AS b(type, tenant_id, payload, priority, max_attempts, lease_seconds,
              run_after, dedup_key, parent_id, root_id, join_id, traceparent, limits)
),
key AS (
    INSERT INTO pipeline.dedup_keys (type, dedup_key, job_id)
    SELECT type, dedup_key, id FROM b WHERE dedup_key IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING job_id
)
INSERT INTO pipeline.active_jobs (id, type, tenant_id, payload, priority, max_attempts,
                                  lease_seconds, run_after, dedup_key, parent_id, root_id, join_id,
                                  traceparent, limits)
OVERRIDING SYSTEM VALUE
SELECT id, type, tenant_id, payload, priority, max_attempts, lease_seconds, run_after,
       dedup_key, parent_id, root_id, join_id, traceparent, limits
FROM b
WHERE dedup_key IS NULL OR id IN (SELECT job_id FROM key)
ORDER BY id
RETURNING id;

-- name: enqueue_many_keyless
-- enqueue_many for a batch without dedup keys, which nothing can conflict with: ON CONFLICT's
-- speculative insertion cost a fifth of the statement.
INSERT INTO pipeline.active_jobs (type, tenant_id, payload, priority, max_attempts,
                                  lease_seconds, run_after, parent_id, root_id, join_id,
                                  traceparent, limits)
SELECT coalesce(b.type, %(type)s::text), coalesce(b.tenant_id, %(tenant_id)s::text), b.payload,
       coalesce(b.priority, %(priority)s::smallint),
       coalesce(b.max_attempts, %(max_attempts)s::integer),
       coalesce(b.lease_seconds, %(lease_seconds)s::integer),
       coalesce(b.run_after, %(run_after)s::timestamptz, now()),
       coalesce(b.parent_id, %(parent_id)s::bigint),
       coalesce(b.root_id, %(root_id)s::bigint), coalesce(b.join_id, %(join_id)s::bigint),
       coalesce(b.traceparent, %(traceparent)s::text),
       coalesce(b.limits, %(limits)s::text)::jsonb
FROM ROWS FROM (unnest(%(types)b::text[]), unnest(%(tenant_ids)b::text[]),
                jsonb_array_elements(%(payloads)s::jsonb), unnest(%(priorities)b::smallint[]),
                unnest(%(max_attempts_each)b::integer[]), unnest(%(lease_seconds_each)b::integer[]),
                unnest(%(run_afters)b::timestamptz[]), unnest(%(parent_ids)b::bigint[]),
                unnest(%(root_ids)b::bigint[]), unnest(%(join_ids)b::bigint[]),
                unnest(%(traceparents)b::text[]), unnest(%(limits_each)b::text[]))
     AS b(type, tenant_id, payload, priority, max_attempts, lease_seconds,
          run_after, parent_id, root_id, join_id, traceparent, limits)
RETURNING id;

-- name: blob_refs_add
-- Runs' references to blobs (pipeline.blob_refs: retention deletes a blob once no run
-- references it): each key with the run whose job's payload names it, found by
-- pg_pipeline.blobs.blob_keys. Sent only when a payload names a blob (pipeline/enqueue.py,
-- pipeline/context.py), in the enqueue's transaction, so the jobs and their references commit
-- together. Ordered, so that two transactions referencing the same blobs for a run take their
-- index entries in the same order.
INSERT INTO pipeline.blob_refs (blob_key, run_id)
SELECT DISTINCT r.blob_key, r.run_id
FROM unnest(%(keys)s::text[], %(runs)s::bigint[]) AS r(blob_key, run_id)
ORDER BY 1, 2
ON CONFLICT DO NOTHING;

-- name: blob_refs_payloads
-- The runs and payloads of jobs a bulk enqueue just inserted, when it cannot tell which of its
-- rows an id is (a dedup key already taken skipped some): their blob keys are found from these.
SELECT coalesce(root_id, id), payload::text FROM pipeline.active_jobs WHERE id = ANY(%(ids)s::bigint[]);

-- name: claim
-- pipeline.claim (sql/functions/claim.sql) takes up to `limit` ready jobs with FOR UPDATE SKIP LOCKED,
-- fairly across tenants and within each tenant's cap; concurrent claimers take disjoint rows,
-- a few at a time (pipeline.claim_turn, pg_pipeline.claim_turns). cap_stages/caps are the
-- worker's default caps per stage (NULL: none).
SELECT id, type, tenant_id, payload, priority, attempts, max_attempts, lease_seconds,
       parent_id, coalesce(root_id, id), claims, suspect, traceparent
FROM pipeline.claim(%(types)s::text[], %(limit)s, %(worker_id)s,
                    %(cap_stages)s::text[], %(caps)s::integer[]);

-- name: warm_up_job
-- A job no worker runs (the type is not a stage name a worker can be given), queued or, with
-- `running`, as a claim leaves it, for JobStore.warm_up to claim or acknowledge in a
-- transaction it rolls back: a worker's connections run the claim's and the acknowledgement's
-- statements, and their triggers', once at start, so that a drain does not pay for their
-- first runs (benchmarks/FLEET.md). Never committed: nothing else sees it, and its
-- notification is not sent.
INSERT INTO pipeline.active_jobs AS j (type, status, attempts, claims, worker_id, started_at,
                                       leased_until)
SELECT %(type)s, CASE WHEN %(running)s THEN 'running' ELSE 'queued' END,
       CASE WHEN %(running)s THEN 1 ELSE 0 END, CASE WHEN %(running)s THEN 1 ELSE 0 END,
       CASE WHEN %(running)s THEN %(worker_id)s::uuid END,
       CASE WHEN %(running)s THEN now() END,
       CASE WHEN %(running)s THEN now() + interval '5 minutes' END
RETURNING j.id, j.claims;

-- name: heartbeat
-- One statement per beat for all of a worker's jobs, and its own liveness row in the same trip.
-- The row is upserted: a worker whose row was pruned during a long outage registers again.
-- A job row locked elsewhere (an operator's open transaction) is skipped, not waited for: a
-- wait would stop every other lease from being extended while it lasts. Such a job is still
-- this claim's (extended = false): the worker keeps it, and nobody can reclaim it while the
-- lock lasts (reclaim skips locked rows too). The jobs that do not come back have lost their
-- lease. The last SELECT reads the rows as the statement began, not as `extended` left them.
--
-- Each held job is read by a LATERAL subquery of its own, which the planner cannot flatten
-- (one locks rows, the other has a LIMIT): its plan is a probe of the primary key per job, as
-- in `acknowledge_skipping`, and the UPDATE finds the locked row by the ctid the lock returned.
-- Written as joins of the table with the held jobs, the plan followed the statistics: planned
-- while the hot table was empty (a worker's first beats on a quiet queue, or after a vacuum
-- found it drained) and kept by the prepared statement, it scanned the whole table for each
-- held job, 0.4-1.6 s a beat for 200 jobs among 20,000, and minutes on a table bloated between
-- vacuums, holding its jobs' rows locked against their acknowledgements meanwhile. A row whose
-- newer version was committed after the statement began is locked in that version, which the
-- statement's snapshot does not see: it is left out like a locked row (still held, not
-- extended), and extended by the next beat.
WITH seen AS (
    INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency, stage_versions)
    VALUES (%(worker_id)s, %(hostname)s, %(pid)s, %(stages)s, %(concurrency)s, %(versions)s)
    ON CONFLICT (id) DO UPDATE SET last_seen = now()
),
held AS (
    SELECT id, claims FROM unnest(%(ids)s::bigint[], %(claims)s::integer[]) AS h(id, claims)
),
extended AS (
    UPDATE pipeline.active_jobs AS j
    SET leased_until = now() + make_interval(secs => j.lease_seconds)
    FROM held
    CROSS JOIN LATERAL (SELECT j.ctid FROM pipeline.active_jobs AS j
                        WHERE j.id = held.id AND j.claims = held.claims
                          AND j.status IS NOT DISTINCT FROM 'running'
                        FOR NO KEY UPDATE OF j SKIP LOCKED) AS free
    WHERE j.ctid = free.ctid
    RETURNING j.id
)
SELECT held.id, extended.id IS NOT NULL AS extended
FROM held
CROSS JOIN LATERAL (SELECT FROM pipeline.active_jobs AS j
                    WHERE j.id = held.id AND j.claims = held.claims
                      AND j.status IS NOT DISTINCT FROM 'running'
                    LIMIT 1) AS owned
LEFT JOIN extended ON extended.id = held.id;

-- name: complete
-- One job's completion, which waits for its row if another transaction holds it locked (the
-- caller bounds that wait with lock_timeout, or settles in its own thread). Takes arrays so
-- that it uses the same fence as the batched acknowledgement below. The job leaves its last
-- error behind (it is the attempts'); each attempt's row is written beside the move, with what
-- the worker sent of it: when it started to run it, and the lines the stage logged (NULL
-- arrays when none did: ROWS FROM pads them), which the DELETE returns beside the row rather
-- than have the attempts' INSERT join the arrays again.
WITH gone AS (
    DELETE FROM pipeline.active_jobs AS j
    USING ROWS FROM (unnest(%(ids)s::bigint[]), unnest(%(claims)s::integer[]),
                     unnest(%(started)s::float8[]), unnest(%(logs)s::text[]),
                     unnest(%(dropped)s::integer[]), unnest(%(wall_us)s::bigint[]),
                     unnest(%(cpu_us)s::bigint[]), unnest(%(usage)s::jsonb[]))
          AS done(id, claims, started, logs, dropped, wall_us, cpu_us, usage)
    WHERE j.id = done.id AND j.claims = done.claims AND j.status IS NOT DISTINCT FROM 'running'
    RETURNING j AS job, done.started, done.logs, done.dropped,
              (done.wall_us / 1e6::float8)::real AS wall_s,
              (done.cpu_us / 1e6::float8)::real AS cpu_s,
              done.usage
),
moved AS (
    INSERT INTO pipeline.job_history
    SELECT h.*
    FROM gone, pipeline.finished_job(job, 'done', NULL, wall_s => wall_s, cpu_s => cpu_s,
                                     usage => usage) AS h
    RETURNING id
),
tried AS (
    INSERT INTO pipeline.job_attempts
    SELECT a.*
    FROM gone, pipeline.ended_attempt(job, 'done', NULL, started, logs, dropped, wall_s, cpu_s,
                                      usage) AS a
    -- A first claim done without a line logged has no row: the job's own row says all of it
    -- (claim, worker, end) but the run's start, and the readers (job_attempts in
    -- queries_admin.sql) make its row from it. The hot path's common case then writes nothing
    -- more; a row for it cost the drain benchmark about 14 per cent.
    WHERE (gone.job).claims > 1 OR gone.logs IS NOT NULL OR gone.dropped > 0
)
SELECT id FROM moved;

-- name: acknowledge
-- A batch of plain completions: each job's row deleted (and moved into the history) when its
-- fence holds. `ids` sorted ascending (JobStore.acknowledge sorts them), `claims` and the
-- attempts' arrays in the same order.
--
-- The DELETE reads its rows by the primary key alone (`id = ANY`, one descent of the index for
-- a run of neighbouring ids) and locks them itself, in the index's order, and finds each job's
-- fence and attempt in the arrays by a binary search (width_bucket over the sorted ids: `at`).
-- No join with the arrays, whose plan followed the statistics: a hot table they say is small,
-- or whose jobs they say are all queued, was scanned whole or joined to every job of the batch
-- (26 ms for 184 jobs; the test in test_query_plan.py keeps that so). `ids[at] = j.id` makes
-- the fence hold whatever order the arrays come in: unsorted, a job is left out, never
-- deleted under another job's claim. Against `acknowledge_skipping` below, which locks each
-- row in a subquery of its own and deletes it by the ctid that returned (and a Memoize above
-- that), this cost 8.9 instead of 10.9 us of the backend's CPU a job in batches of 184
-- (docs/measurements.md, 2026-12-03 (o)).
--
-- A row locked elsewhere is waited for, as any lock is, no longer than the caller's
-- lock_timeout, which JobStore.acknowledge keeps short: a heartbeat's lock lasts a moment (and
-- the row is deleted in the version the heartbeat left: its fence is the same); past the
-- timeout the statement is rolled back and the caller writes the batch with
-- `acknowledge_skipping`. On the acknowledger's own connection that timeout is its session's,
-- and the statement runs alone in autocommit (`lock_timeout` says when).
WITH gone AS (
    DELETE FROM pipeline.active_jobs AS j
    WHERE j.id = ANY (%(ids)s::bigint[])
      AND (%(ids)s::bigint[])[width_bucket(j.id, %(ids)s::bigint[])] = j.id
      AND j.claims = (%(claims)s::integer[])[width_bucket(j.id, %(ids)s::bigint[])]
      AND j.status IS NOT DISTINCT FROM 'running'
    RETURNING j AS job, width_bucket(j.id, %(ids)s::bigint[]) AS at
),
moved AS (
    INSERT INTO pipeline.job_history
    SELECT h.*
    FROM gone, pipeline.finished_job(
        job, 'done', NULL,
        wall_s => ((%(wall_us)s::bigint[])[at] / 1e6::float8)::real,
        cpu_s => ((%(cpu_us)s::bigint[])[at] / 1e6::float8)::real,
        usage => (%(usage)s::jsonb[])[at]) AS h
    RETURNING id
),
tried AS (
    INSERT INTO pipeline.job_attempts
    SELECT a.*
    FROM gone, pipeline.ended_attempt(
        job, 'done', NULL, (%(started)s::float8[])[at], (%(logs)s::text[])[at],
        (%(dropped)s::integer[])[at], ((%(wall_us)s::bigint[])[at] / 1e6::float8)::real,
        ((%(cpu_us)s::bigint[])[at] / 1e6::float8)::real, (%(usage)s::jsonb[])[at]) AS a
    -- As in `complete`: a first claim done without a line logged has no row.
    WHERE (gone.job).claims > 1 OR (%(logs)s::text[])[at] IS NOT NULL
       OR (%(dropped)s::integer[])[at] > 0
)
SELECT id FROM moved;

-- name: acknowledge_skipping
-- `acknowledge` when a row of the batch stayed locked past its short wait. A row locked
-- elsewhere (an operator's open transaction) is skipped rather than waited for: a wait would
-- hold up the rest of the batch and every batch behind it, and their jobs' leases would run
-- out. A skipped job does not come back, like a lost one; the caller tells the two apart
-- (still_held) and settles a locked one alone (`complete`).
-- A lock it cannot skip (a fan-out's join row, which the history's trigger counts in) is waited
-- for no longer than the caller's lock_timeout: then the caller settles the batch one by one.
-- A capped tenant's slot counter is not one: the slots go back into pipeline.freed_slots.
-- FOR UPDATE is the lock the DELETE takes anyway.
--
-- Each job is locked by a LATERAL subquery of its own, which the planner cannot flatten (it
-- locks rows): its only plan is a probe of the primary key per job. Written as a join of the
-- table with the arrays, the planner was free to read the whole table instead, and did
-- whenever the statistics made the hot table look small or its running jobs few (a hash join
-- over a sequential scan, or a scan of the table joined to every job of the batch): a hot
-- table holds few rows, and autovacuum analyzes it every few thousand jobs.
--
-- The DELETE finds each locked row by the ctid its lock returned (a TID scan, one page read)
-- rather than by a second probe of the primary key: the acknowledgement alone cost 9.9 instead
-- of 10.9 us a job (docs/measurements.md, 2026-12-02 (h)). A row whose newer version was
-- committed after the statement began (a heartbeat's, between its snapshot and its lock) is
-- locked in that version, which the statement's snapshot does not see: it is left out like a
-- locked row, and the caller settles it alone.
WITH gone AS (
    DELETE FROM pipeline.active_jobs AS j
    USING ROWS FROM (unnest(%(ids)s::bigint[]), unnest(%(claims)s::integer[]),
                     unnest(%(started)s::float8[]), unnest(%(logs)s::text[]),
                     unnest(%(dropped)s::integer[]), unnest(%(wall_us)s::bigint[]),
                     unnest(%(cpu_us)s::bigint[]), unnest(%(usage)s::jsonb[]))
          AS done(id, claims, started, logs, dropped, wall_us, cpu_us, usage)
    CROSS JOIN LATERAL (SELECT j.ctid FROM pipeline.active_jobs AS j
                        WHERE j.id = done.id AND j.claims = done.claims
                          AND j.status IS NOT DISTINCT FROM 'running'
                        FOR UPDATE OF j SKIP LOCKED) AS free
    WHERE j.ctid = free.ctid
    RETURNING j AS job, done.started, done.logs, done.dropped,
              (done.wall_us / 1e6::float8)::real AS wall_s,
              (done.cpu_us / 1e6::float8)::real AS cpu_s,
              done.usage
),
moved AS (
    INSERT INTO pipeline.job_history
    SELECT h.*
    FROM gone, pipeline.finished_job(job, 'done', NULL, wall_s => wall_s, cpu_s => cpu_s,
                                     usage => usage) AS h
    RETURNING id
),
tried AS (
    INSERT INTO pipeline.job_attempts
    SELECT a.*
    FROM gone, pipeline.ended_attempt(job, 'done', NULL, started, logs, dropped, wall_s, cpu_s,
                                      usage) AS a
    -- As in `complete`: a first claim done without a line logged has no row.
    WHERE (gone.job).claims > 1 OR gone.logs IS NOT NULL OR gone.dropped > 0
)
SELECT id FROM moved;

-- name: still_held
-- Which of these claims still own their job, without waiting for a lock: after a batched
-- acknowledgement, what it did not confirm is either lost (not here) or locked elsewhere (here).
-- Each job is read by a LATERAL subquery of its own, which its LIMIT keeps the planner from
-- flattening: a probe of the primary key per job, as in `heartbeat`. Written as a join of the
-- table with the arrays, its plan followed the statistics, and on a hot table analyzed while
-- it held few running jobs (or none) it scanned the whole table (into a hash, or joined to
-- every job of the arrays).
SELECT h.id
FROM unnest(%(ids)s::bigint[], %(claims)s::integer[]) AS h(id, claims)
CROSS JOIN LATERAL (SELECT FROM pipeline.active_jobs AS j
                    WHERE j.id = h.id AND j.claims = h.claims
                      AND j.status IS NOT DISTINCT FROM 'running'
                    LIMIT 1) AS owned;

-- name: lock_timeout
-- For the rest of the current transaction (`local`), or of the session: how long a statement
-- waits for a lock before it fails with lock_not_available (55P03), e.g. '1000ms'. With
-- `planned_once`, its statements are planned once too: a connection plans a prepared statement
-- afresh for its first five runs before it keeps a generic plan, which is what a completion's
-- statement keeps. A worker's acknowledger is a connection of its own, and a fresh worker of a
-- fleet of sixteen writes about six batches in a 20,000-job drain: every one of them was
-- planned afresh, 0.3-0.5 ms of its backend's CPU a batch (docs/measurements.md, 2026-12-04
-- (an)). Transaction-local, both settings end with the transaction, so through a transaction
-- pooler they never reach another client's; only the acknowledger's connection sets them for
-- its session, and only where no transaction pooler stands between (pipeline/store.py,
-- hold_ack_settings), so that each batch's first write is one statement of its own.
SELECT set_config('lock_timeout', %(timeout)s, %(local)s::boolean),
       CASE WHEN %(planned_once)s::boolean
            THEN set_config('plan_cache_mode', 'force_generic_plan', %(local)s::boolean) END;

-- name: lock_timeout_as_configured
-- For the rest of the current transaction: the lock timeout the session started with (the
-- server's, the database's or the role's; no limit unless one is configured), whatever the
-- session set since. Making the history's partitions (pipeline/history.py, healing) waits for
-- its locks as long as that: on the acknowledger's connection, whose session holds a lock
-- timeout of 50 ms, it would otherwise fail behind any reader of the history.
SELECT set_config('lock_timeout', reset_val, true) FROM pg_settings WHERE name = 'lock_timeout';

-- name: retry_later
-- Whether to retry was decided in pipeline/outcomes.py; this only writes it. With `refund`, the
-- attempt is given back too: the worker could not run the job, through no fault of the job's
-- (it must run alone and no child process could start, or it left the job to a worker that
-- runs another version of its stage). The attempt's row is written from the row as the claim
-- left it (`held`, locked as the UPDATE locks it), since the UPDATE clears its worker.
WITH held AS (
    SELECT j AS job, j.id FROM pipeline.active_jobs AS j
    WHERE j.id = %(id)s AND j.claims = %(claims)s AND j.status IS NOT DISTINCT FROM 'running'
    FOR NO KEY UPDATE
),
back AS (
    UPDATE pipeline.active_jobs AS j
    SET status = 'queued',
        attempts = j.attempts - %(refund)s::boolean::integer,
        run_after = now() + make_interval(secs => %(delay_s)s),
        leased_until = NULL,
        worker_id = NULL,
        last_error = %(error)s
    FROM held
    WHERE j.id = held.id
    RETURNING j.id
),
tried AS (
    INSERT INTO pipeline.job_attempts
    SELECT a.*
    FROM held, pipeline.ended_attempt(job, %(outcome)s, %(error)s, %(started)s::float8, %(logs)s,
                                   %(dropped)s, %(wall_s)s::real, %(cpu_s)s::real,
                                   %(usage)s::jsonb) AS a
)
SELECT id FROM back;

-- name: fail
-- outcome: failed, or how the last attempt ended when that is what failed it (timed_out,
-- crashed), for its attempt's row.
WITH gone AS (
    DELETE FROM pipeline.active_jobs AS j
    WHERE j.id = %(id)s AND j.claims = %(claims)s AND j.status IS NOT DISTINCT FROM 'running'
    RETURNING j AS job
),
moved AS (
    INSERT INTO pipeline.job_history
    SELECT h.*
    FROM gone, pipeline.finished_job(job, 'failed', %(error)s, wall_s => %(wall_s)s::real,
                                     cpu_s => %(cpu_s)s::real, usage => %(usage)s::jsonb) AS h
    RETURNING id
),
tried AS (
    INSERT INTO pipeline.job_attempts
    SELECT a.*
    FROM gone, pipeline.ended_attempt(job, %(outcome)s, %(error)s, %(started)s::float8, %(logs)s,
                                   %(dropped)s, %(wall_s)s::real, %(cpu_s)s::real,
                                   %(usage)s::jsonb) AS a
)
SELECT id FROM moved;

-- name: release
-- A worker stopping gives back the jobs it could not finish. The first few releases of a job
-- refund its attempt, so a deploy is never what makes a job fail; past that the job is charged
-- like any run, so one that always outlasts the grace period still ends at max_attempts: it
-- fails, and moves into the history, while the others go back to the queue.
WITH held AS (
    SELECT j AS job, j.id, j.releases < %(free_releases)s AS free,
           j.releases >= %(free_releases)s AND j.attempts >= j.max_attempts AS final
    FROM pipeline.active_jobs AS j
    JOIN unnest(%(ids)s::bigint[], %(claims)s::integer[]) AS h(id, claims)
      ON j.id = h.id AND j.claims = h.claims
    WHERE j.status IS NOT DISTINCT FROM 'running'
    FOR UPDATE OF j
),
requeued AS (
    UPDATE pipeline.active_jobs AS j
    SET status = 'queued',
        attempts = j.attempts - held.free::int,
        releases = j.releases + 1,
        run_after = now(),
        leased_until = NULL,
        worker_id = NULL,
        last_error = CASE WHEN held.free THEN 'released at worker shutdown'
                          ELSE 'released at worker shutdown (charged: released '
                               || j.releases + 1 || ' times)' END
    FROM held
    WHERE j.id = held.id AND NOT held.final
    RETURNING j.id, j.status
),
gone AS (
    DELETE FROM pipeline.active_jobs AS j
    USING held
    WHERE j.id = held.id AND held.final
    RETURNING j AS job
),
failed AS (
    INSERT INTO pipeline.job_history
    SELECT h.*
    FROM gone, pipeline.finished_job(
               job, 'failed',
               'released at worker shutdown on its final attempt, ' || (job).releases + 1
                   || ' releases in all',
               released => true) AS h
    RETURNING id, status
),
tried AS (
    -- The attempt was given back, whatever became of the job (the fail above says so itself).
    INSERT INTO pipeline.job_attempts
    SELECT a.*
    FROM held, pipeline.ended_attempt(
               job, 'given_back',
               'released at worker shutdown' || CASE WHEN free THEN '' ELSE ' (charged)' END) AS a
)
SELECT id, status FROM requeued
UNION ALL
SELECT id, status FROM failed;

-- name: unclaim
-- Jobs claimed ahead of a free runner (prefetched) that never started, given back when the
-- worker stops: as if never claimed, so the attempt is refunded and no release is counted, and
-- they keep their place in the queue. claims stays: a fencing token is never reused.
UPDATE pipeline.active_jobs AS j
SET status = 'queued', attempts = j.attempts - 1, leased_until = NULL, worker_id = NULL,
    started_at = NULL
FROM unnest(%(ids)s::bigint[], %(claims)s::integer[]) AS held(id, claims)
WHERE j.id = held.id AND j.claims = held.claims AND j.status IS NOT DISTINCT FROM 'running'
RETURNING j.id;

-- name: cancelled_claims
-- Which of these claims were really cancelled. A cancel notification is only a hint (anyone who
-- can connect may send one): the worker abandons a job only once its row says so. One read by
-- id for every hint that arrived together, in the history (a cancelled job has moved there:
-- the hot table's CHECK on status leaves its arm of pipeline.jobs out of the plan).
-- Each hint is read by a LATERAL subquery of its own, as in `still_held`: a probe by id of
-- each day of the history (job_history_failed, or job_history_id) and of the kept rows (their
-- primary key), stopping at the first day that has it. The history has no index on id alone
-- that spans its days (a unique one would need the finish time), and the id says nothing of
-- the day, so a day is probed whether or not it can hold the job: one small index's descent a
-- day for each hint. Written as a join of the view with the arrays, its plan followed the
-- statistics: a hash or merge join of the hints with every failed and cancelled job of every
-- day (by job_history_failed, or reading the days whole when planned while they were empty).
SELECT c.id
FROM unnest(%(ids)s::bigint[], %(claims)s::integer[]) AS c(id, claims)
CROSS JOIN LATERAL (SELECT FROM pipeline.jobs AS j
                    WHERE j.id = c.id AND j.claims = c.claims AND j.status = 'cancelled'
                    LIMIT 1) AS found;

-- name: reclaim_expired
-- An expired lease means the worker died or stalled, which no job in it can be blamed for:
-- every job it held shared its fate. So the attempt is refunded and the job becomes a suspect,
-- which the next worker runs in a child process, where a crash is attributable and charged.
-- Refunds are bounded per job (free_crashes) so a job that kills its worker even from a child
-- still ends failed (and moves into the history); past them, attempts count as usual and the
-- final one fails the job. SKIP LOCKED leaves rows a worker is settling right now to that
-- worker.
WITH expired AS (
    SELECT j AS job, j.id, j.crash_reclaims < %(free_crashes)s AS free,
           j.crash_reclaims >= %(free_crashes)s AND j.attempts >= j.max_attempts AS final
    FROM pipeline.active_jobs AS j
    WHERE j.status = 'running' AND j.leased_until < now()
    ORDER BY j.leased_until
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
requeued AS (
    UPDATE pipeline.active_jobs AS j
    SET status = 'queued',
        attempts = j.attempts - expired.free::int,
        crash_reclaims = j.crash_reclaims + expired.free::int,
        suspect = true,
        run_after = now(),
        leased_until = NULL,
        worker_id = NULL,
        last_error = CASE WHEN expired.free
                          THEN 'lease expired: its worker died or stalled; not charged, '
                               'it runs in isolation next'
                          ELSE 'lease expired' END
    FROM expired
    WHERE j.id = expired.id AND NOT expired.final
    RETURNING j.id, j.type, j.status
),
gone AS (
    DELETE FROM pipeline.active_jobs AS j
    USING expired
    WHERE j.id = expired.id AND expired.final
    RETURNING j AS job
),
failed AS (
    INSERT INTO pipeline.job_history
    SELECT h.*
    FROM gone, pipeline.finished_job(job, 'failed', 'lease expired on final attempt',
                                  lost => true) AS h
    RETURNING id, type, status
),
tried AS (
    -- The attempt was lost with its worker, and with it what the worker held of it: its
    -- start and its log lines.
    INSERT INTO pipeline.job_attempts
    SELECT a.*
    FROM expired,
         pipeline.ended_attempt(job, 'lost', 'lease expired: its worker died or stalled') AS a
)
SELECT id, type, status FROM requeued
UNION ALL
SELECT id, type, status FROM failed;

-- name: notify_ready
-- Requeued jobs did not go through INSERT, so no trigger woke anyone.
SELECT pg_notify('pipeline_jobs', t.type)
FROM unnest(%(types)s::text[]) AS t(type);

-- name: register_worker
INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency, stage_versions)
VALUES (%(worker_id)s, %(hostname)s, %(pid)s, %(stages)s, %(concurrency)s, %(versions)s)
ON CONFLICT (id) DO UPDATE SET last_seen = now();

-- name: record_stages
-- A starting worker's stages, one row per (stage, version of its input model): a version
-- already there takes this worker's settings and time, a new one is added beside the others.
INSERT INTO pipeline.stages AS s (name, version, input_schema, output_schema, then_stage,
                                  max_attempts, lease_seconds, priority, tenant_cap,
                                  recorded_by, hostname, code_version, limits)
SELECT r.name, r.version, r.input_schema, r.output_schema, r.then_stage, r.max_attempts,
       r.lease_seconds, r.priority, r.tenant_cap, %(worker_id)s, %(hostname)s, r.code_version,
       r.limits
FROM jsonb_to_recordset(%(stages)s::jsonb) AS r(
    name text, version text, input_schema jsonb, output_schema jsonb, then_stage text,
    max_attempts integer, lease_seconds integer, priority smallint, tenant_cap integer,
    code_version text, limits jsonb)
ON CONFLICT (name, version) DO UPDATE
SET input_schema = EXCLUDED.input_schema, output_schema = EXCLUDED.output_schema,
    code_version = EXCLUDED.code_version,
    then_stage = EXCLUDED.then_stage, max_attempts = EXCLUDED.max_attempts,
    lease_seconds = EXCLUDED.lease_seconds, priority = EXCLUDED.priority,
    tenant_cap = EXCLUDED.tenant_cap, limits = EXCLUDED.limits,
    recorded_by = EXCLUDED.recorded_by,
    hostname = EXCLUDED.hostname, updated_at = now();

-- name: recorded_stages
-- The recorded versions of the stages named (of every stage when names is NULL), the latest
-- recorded first, each with whether a live worker runs it (its stage_versions says so).
SELECT s.name, s.version, s.input_schema, s.output_schema, s.then_stage, s.max_attempts,
       s.lease_seconds, s.priority, s.tenant_cap, s.recorded_by, s.hostname, s.updated_at,
       EXISTS (SELECT FROM pipeline.workers AS w
               WHERE w.stage_versions ->> s.name = s.version
                 AND w.last_seen > now() - make_interval(secs => %(alive_s)s)) AS live,
       s.code_version, s.limits
FROM pipeline.stages AS s
WHERE %(names)s::text[] IS NULL OR s.name = ANY(%(names)s::text[])
ORDER BY s.name, s.updated_at DESC, s.version;

-- name: recorded_stage_names
SELECT DISTINCT name FROM pipeline.stages ORDER BY name;

-- name: other_stage_version_alive
-- Whether a live worker other than this one runs another version of the stage than `version`
-- (or does not say which: a worker of an older package), so may accept a payload this one
-- rejects.
SELECT EXISTS (
    SELECT FROM pipeline.workers
    WHERE id <> %(worker_id)s AND %(stage)s = ANY(stages)
      AND last_seen > now() - make_interval(secs => %(alive_s)s)
      AND stage_versions ->> %(stage)s IS DISTINCT FROM %(version)s
);

-- name: unregister_worker
DELETE FROM pipeline.workers WHERE id = %(id)s;

-- name: prune_workers
-- Workers that stopped beating long ago died without saying so.
DELETE FROM pipeline.workers
WHERE last_seen < now() - make_interval(secs => %(after_s)s)
RETURNING id;

-- name: listen
-- Channel names are fixed: pipeline_jobs carries a job type, pipeline_cancel "id:claims".
LISTEN pipeline_jobs;
LISTEN pipeline_cancel;

-- name: insert_join
INSERT INTO pipeline.joins (id, root_id, total, then_type, then_payload, then_tenant_id,
                       then_priority, then_max_attempts, then_lease_seconds, then_traceparent,
                       then_limits)
VALUES (%(id)s, %(root_id)s, %(total)s, %(then_type)s, %(then_payload)s::jsonb, %(then_tenant_id)s,
        %(then_priority)s, %(then_max_attempts)s, %(then_lease_seconds)s, %(then_traceparent)s,
        %(then_limits)s::jsonb);

-- name: save_output
-- Runs inside the completing transaction. The first output under a key stays: a second
-- writer of the same job, or another job of the same (run, stage, part, generation), changes
-- nothing. The generation is the job's (pipeline.run_generations): 0 unless a rerun of its run
-- enqueued it or what it led to; the probe finds nothing in a run never rerun.
INSERT INTO pipeline.outputs (root_id, stage, part, job_id, attempt, output, generation,
                              code_version)
VALUES (%(root_id)s, %(stage)s, %(part)s, %(job_id)s, %(attempt)s, %(output)s,
        coalesce((SELECT max(g.generation) FROM pipeline.run_generations AS g
                  WHERE g.run_id = %(root_id)s AND g.first_job_id <= %(job_id)s), 0),
        %(code_version)s)
ON CONFLICT DO NOTHING;

-- name: job_output
-- What this very job stored on an earlier run that committed: reuse is exact, per job. Its
-- first generation: a later one under its id is a version stored over it (a review's).
SELECT output FROM pipeline.outputs WHERE job_id = %(job_id)s ORDER BY generation LIMIT 1;

-- name: run_output
-- A run's output of one stage and part (NULL for a stage that declares no part): the first,
-- of the generation asked for, else of the newest made by the code version asked for, else of
-- the newest.
SELECT output FROM pipeline.outputs
WHERE root_id = %(root_id)s AND stage = %(stage)s AND part IS NOT DISTINCT FROM %(part)s
  AND (%(generation)s::integer IS NULL OR generation = %(generation)s)
  AND (%(version)s::text IS NULL OR code_version = %(version)s)
ORDER BY generation DESC, job_id
LIMIT 1;

-- name: run_outputs
-- A run's outputs of one stage, of one generation: the one asked for, else the newest made by
-- the code version asked for, else the newest. Never a mix: a rerun's stage reads its
-- upstream stages' outputs as they were, and its own downstream stages' new ones.
SELECT part, output FROM pipeline.outputs
WHERE root_id = %(root_id)s AND stage = %(stage)s
  AND generation = coalesce(%(generation)s::integer,
                            (SELECT max(o.generation) FROM pipeline.outputs AS o
                             WHERE o.root_id = %(root_id)s AND o.stage = %(stage)s
                               AND (%(version)s::text IS NULL
                                    OR o.code_version = %(version)s)))
ORDER BY part, job_id;

-- name: stage_outputs
-- Every run's outputs of one stage, oldest job first, by keyset (job_id > after), with the run's
-- tenant: the run's row where it has one (a run of more than one job), else the job's own.
SELECT o.root_id, o.job_id, o.part, o.output, o.created_at, t.tenant_id
FROM pipeline.outputs o
LEFT JOIN pipeline.runs r ON r.run_id = o.root_id
CROSS JOIN LATERAL (
    SELECT CASE WHEN r.run_id IS NOT NULL THEN r.tenant_id
                ELSE (SELECT j.tenant_id FROM pipeline.jobs j WHERE j.id = o.job_id) END
) AS t (tenant_id)
WHERE o.stage = %(stage)s AND o.job_id > %(after)s
  AND (%(tenant)s::text IS NULL OR t.tenant_id = %(tenant)s::text)
ORDER BY o.job_id
LIMIT %(limit)s;

-- name: run_progress
-- Per stage of one run: how many jobs are in each state, and the newest error.
SELECT type, status, count(*) AS jobs,
       (array_agg(last_error ORDER BY finished_at DESC NULLS LAST)
            FILTER (WHERE status = 'failed'))[1] AS error
FROM pipeline.jobs
WHERE id = %(root_id)s OR root_id = %(root_id)s  -- the root, then its descendants
GROUP BY type, status
ORDER BY min(id);

-- name: run_state
-- A run's stored status (pipeline.runs) with the stage of the job that blocks it; for a job
-- without descendants, which has no row there, the job's own status (queued or running:
-- running) and, when it failed or was cancelled, the job itself. By primary keys.
SELECT coalesce(r.status, CASE WHEN j.status IN ('queued', 'running') THEN 'running'
                               ELSE j.status END),
       CASE WHEN r.run_id IS NOT NULL THEN r.blocked_job_id
            WHEN j.status IN ('failed', 'cancelled') THEN j.id END,
       CASE WHEN r.run_id IS NOT NULL
            THEN (SELECT b.type FROM pipeline.jobs AS b WHERE b.id = r.blocked_job_id)
            WHEN j.status IN ('failed', 'cancelled') THEN j.type END,
       CASE WHEN r.run_id IS NOT NULL THEN r.blocked_reason
            WHEN j.status IN ('failed', 'cancelled') THEN j.last_error END
FROM pipeline.jobs AS j
LEFT JOIN pipeline.runs AS r ON r.run_id = j.id
WHERE j.id = %(run_id)s;

-- name: live_workers_for_stage
SELECT count(*) FROM pipeline.workers
WHERE %(stage)s = ANY(stages) AND last_seen > now() - make_interval(secs => %(alive_s)s);

-- name: doctor_notify
SELECT pg_notify('pipeline_doctor', %(token)s);

-- name: doctor_listen
LISTEN pipeline_doctor;

-- name: server_version
SELECT current_setting('server_version');

-- name: backend_pid
-- Differs from the pid libpq was given at login when a connection pooler sits in between.
SELECT pg_backend_pid();
