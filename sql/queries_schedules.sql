-- Recurring schedules (pipeline/schedules.py is the only caller): the scheduler's tick, the sync
-- of code-declared schedules when a worker starts, and `pipeline schedule`'s queries.
--
-- Exactly one job per (schedule, fire time), however many schedulers tick at once. The tick
-- locks due rows FOR UPDATE SKIP LOCKED, and in that same transaction inserts each fire time's
-- job and moves next_fire_at past it: a concurrent scheduler skips the locked row, and one that
-- reaches it after the commit re-reads it (READ COMMITTED re-checks the WHERE clause on the new
-- version) and finds it no longer due. Behind that, each fired job carries the dedup key
-- `schedule:<name>@<fire time, UTC>` (pipeline.schedules.fire_key), which pipeline.dedup_keys makes
-- unique per stage. We use that key rather than a column of our own because it already exists,
-- `enqueue` already turns its conflict into "the job is there", and a schedule column on jobs
-- would widen the hottest table and add a second unique index to every insert for a guarantee
-- the first one gives. The key also shows in `pipeline jobs show` which fire made a job.

-- name: schedule_clock
SELECT now();

-- name: schedule_any_due
-- Whether a tick has anything to fire: one statement outside a transaction, so that the tick
-- each worker runs every second costs one round trip when nothing is due (nearly every tick)
-- instead of schedule_due's transaction of three. It decides nothing: a row it finds due is
-- locked and re-read by schedule_due, and one that comes due just after it is fired by the
-- next tick, as it would be had the tick run a moment earlier. It reads schedule_due's rows by
-- the same partial index, counting those a tick leaves for another worker: while one is due,
-- every tick takes the long way, as before.
SELECT EXISTS (
    SELECT FROM pipeline.schedules AS s
    WHERE s.next_fire_at <= coalesce(%(now)s::timestamptz, now())
      AND NOT s.paused AND s.stage = ANY(%(stages)s::text[])
);

-- name: schedule_due
-- The clock is the database's unless a test passes one, and is returned with each row so that
-- the fire times computed in Python agree with the WHERE clause. Only stages the caller's code
-- knows: it validates each payload and applies the stage's defaults (attempts, lease, priority).
-- `left` names the rows this tick already left for another worker (they stay due): without it,
-- a batch of such rows would come back at the head of every batch and hide the rows behind.
-- The partial index schedules_due holds the unpaused rows in fire-time order.
SELECT s.name, s.stage, s.cron, s.every_s, s.timezone, s.payload, s.tenant_id, s.catch_up,
       s.next_fire_at, c.now
FROM (SELECT coalesce(%(now)s::timestamptz, now()) AS now) AS c
JOIN pipeline.schedules AS s ON s.next_fire_at <= c.now
WHERE NOT s.paused AND s.stage = ANY(%(stages)s::text[]) AND s.name <> ALL(%(left)s::text[])
ORDER BY s.next_fire_at, s.name
LIMIT %(limit)s
FOR UPDATE OF s SKIP LOCKED;

-- name: schedule_advance
-- last_fired_at and last_job_id keep their values on a tick that enqueued nothing new.
UPDATE pipeline.schedules
SET next_fire_at = %(next_fire_at)s,
    last_fired_at = coalesce(%(fired_at)s, last_fired_at),
    last_job_id = coalesce(%(job_id)s, last_job_id),
    last_error = %(error)s,
    updated_at = now()
WHERE name = %(name)s;

-- name: schedule_note
-- Why this worker left a due row to another one, without moving its fire time. Written once per
-- reason: the workers that keep leaving it, tick after tick, rewrite nothing.
UPDATE pipeline.schedules
SET last_error = %(error)s, updated_at = now()
WHERE name = %(name)s AND last_error IS DISTINCT FROM %(error)s;

-- name: schedule_sync_lock
-- Syncs from workers starting at once take turns; ticks (SKIP LOCKED) never wait for them.
SELECT pg_advisory_xact_lock(7263941873222);

-- name: schedule_upsert
-- A definition whose timing (cron, every_s, timezone) is unchanged keeps its next fire time, so
-- a restart or a deploy neither skips nor repeats a fire; a changed one starts afresh from the
-- given first fire time. paused is the operator's and survives every upsert. Code takes over a
-- CLI schedule of the same name; the CLI never overwrites a code one (no row comes back).
-- xmax is 0 on a freshly inserted row version, so it tells an insert from an update.
INSERT INTO pipeline.schedules AS s (name, stage, cron, every_s, timezone, payload, tenant_id,
                                     catch_up, source, next_fire_at)
VALUES (%(name)s, %(stage)s, %(cron)s, %(every_s)s, %(timezone)s, %(payload)s, %(tenant_id)s,
        %(catch_up)s, %(source)s, %(next_fire_at)s)
ON CONFLICT (name) DO UPDATE
SET stage = EXCLUDED.stage,
    cron = EXCLUDED.cron,
    every_s = EXCLUDED.every_s,
    timezone = EXCLUDED.timezone,
    payload = EXCLUDED.payload,
    tenant_id = EXCLUDED.tenant_id,
    catch_up = EXCLUDED.catch_up,
    source = EXCLUDED.source,
    next_fire_at = CASE
        WHEN (s.cron, s.every_s, s.timezone)
             IS NOT DISTINCT FROM (EXCLUDED.cron, EXCLUDED.every_s, EXCLUDED.timezone)
        THEN s.next_fire_at
        ELSE EXCLUDED.next_fire_at
    END,
    last_error = NULL,
    updated_at = now()
WHERE EXCLUDED.source = 'code' OR s.source = 'cli'
RETURNING (s.xmax = 0) AS inserted, s.next_fire_at;

-- name: schedule_prune_code
-- Code schedules the code no longer declares, among the stages that code knows: a worker of
-- another app sharing the database leaves that app's schedules alone.
DELETE FROM pipeline.schedules
WHERE source = 'code'
  AND stage = ANY(%(stages)s::text[])
  AND name <> ALL(%(names)s::text[])
RETURNING name;

-- name: schedule_list
SELECT name, stage, cron, every_s, timezone, payload, tenant_id, catch_up, source, paused,
       next_fire_at, last_fired_at, last_job_id, last_error
FROM pipeline.schedules
ORDER BY name;

-- name: schedule_remove
DELETE FROM pipeline.schedules WHERE name = %(name)s RETURNING source;

-- name: schedule_pause
UPDATE pipeline.schedules SET paused = true, updated_at = now()
WHERE name = %(name)s
RETURNING name;

-- name: schedule_lock
-- Resume computes the next fire time from the row; locked so that a tick cannot move it between.
SELECT cron, every_s, timezone, paused, next_fire_at
FROM pipeline.schedules
WHERE name = %(name)s
FOR UPDATE;

-- name: schedule_resume
UPDATE pipeline.schedules SET paused = false, next_fire_at = %(next_fire_at)s, updated_at = now()
WHERE name = %(name)s;
