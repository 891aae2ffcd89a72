-- Tenants cost nothing extra (issue 21, item 4). A capped job that left running gave its slot
-- back by a row trigger that decremented its pair's counter: a function call and an UPDATE per
-- job, and, worse, a wait. The claim holds a capped pair's counter locked from its count to its
-- commit (sql/functions/lock_slots.sql), so a batch of completions queued behind every claim,
-- and held the counters itself until its own commit, during which claims skipped those pairs.
-- Now a slot given back is a row inserted into pipeline.freed_slots, which waits for no one,
-- once per statement and pair when jobs finish (a DELETE: they move into the history); the
-- pair's next claim subtracts those rows under the lock it takes anyway, and deletes them.

-- Slots given back that no claim has subtracted from their pair's counter yet: a pair's jobs
-- holding a slot are its counter's running less the sum of n here. Written by the triggers
-- that free slots (insert only); read and deleted by the holder of the pair's counter lock (the
-- claim, the slot repair).
CREATE TABLE pipeline.freed_slots (
    tenant_id text    NOT NULL,
    stage     text    NOT NULL,
    n         integer NOT NULL
);
CREATE INDEX freed_slots_pair ON pipeline.freed_slots (tenant_id, stage);
-- A few rows at a time, each deleted by the pair's next claim: vacuumed often.
ALTER TABLE pipeline.freed_slots SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_insert_scale_factor = 0.01
);

-- The counters of an installation already count the slots of its running jobs: nothing to move.

-- A finished job leaves by a DELETE: its statement's slots are given back at once, a row per
-- pair. The UPDATE path (retry, release, reclaim) keeps its row trigger: a trigger with
-- transition tables cannot name columns (UPDATE OF status), so it would fire on every claim and
-- heartbeat, and only a row trigger can clear the row's holds_slot.
DROP TRIGGER jobs_free_slot_on_delete ON pipeline.active_jobs;
-- The function: sql/functions/free_deleted_slots.sql.
CREATE TRIGGER jobs_free_deleted_slots
    AFTER DELETE ON pipeline.active_jobs
    REFERENCING OLD TABLE AS gone_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION pipeline.free_deleted_slots();

-- Readers see what the pairs hold: the counter less its slots given back.
CREATE OR REPLACE VIEW pipeline.tenant_load AS
SELECT k.tenant_id, k.stage, k.running, k.cap, k.cap - k.running AS free,
       (SELECT count(*) FROM pipeline.active_jobs j
        WHERE j.status = 'queued' AND j.tenant_id = k.tenant_id AND j.type = k.stage) AS queued
FROM (
    SELECT coalesce(c.tenant_id, s.tenant_id) AS tenant_id,
           coalesce(c.stage, s.stage) AS stage,
           coalesce(s.running, 0) AS running,
           c.cap
    FROM pipeline.tenant_caps c
    FULL JOIN (
        SELECT t.tenant_id, t.stage,
               greatest(t.running - coalesce((SELECT sum(f.n) FROM pipeline.freed_slots f
                                              WHERE f.tenant_id = t.tenant_id
                                                AND f.stage = t.stage), 0), 0)::integer
                   AS running
        FROM pipeline.tenant_slots t
    ) AS s ON s.tenant_id = c.tenant_id AND s.stage = c.stage
    WHERE c.cap IS NOT NULL OR s.running > 0
) AS k;
