-- Recurring schedules: declared in code with pipeline.schedule() (synced when a worker starts)
-- or added with `pipeline schedule add`. Any worker's scheduler fires a due row: it locks the
-- row FOR UPDATE SKIP LOCKED, inserts the fire time's job under the jobs table's dedup key and
-- advances next_fire_at in one transaction (sql/queries_schedules.sql), so there is no leader.
CREATE TABLE pipeline_schedules (
    name          text        PRIMARY KEY,
    stage         text        NOT NULL,
    -- Exactly one of them: a cron expression read in `timezone`, or a period in seconds.
    cron          text,
    every_s       double precision CONSTRAINT pipeline_schedules_every_check CHECK (every_s > 0),
    timezone      text        NOT NULL DEFAULT 'UTC',
    payload       jsonb       NOT NULL DEFAULT '{}'::jsonb,
    tenant_id     text,
    -- Fire times missed while no scheduler ran that are still enqueued: the latest ones.
    catch_up      integer     NOT NULL DEFAULT 1
                  CONSTRAINT pipeline_schedules_catch_up_check CHECK (catch_up >= 1),
    -- 'code': upserted by sync_schedules, deleted once the code no longer declares it.
    -- 'cli': made by `pipeline schedule add`, kept until `pipeline schedule remove`.
    source        text        NOT NULL
                  CONSTRAINT pipeline_schedules_source_check CHECK (source IN ('code', 'cli')),
    paused        boolean     NOT NULL DEFAULT false,
    -- The earliest fire time not yet enqueued; it is due once it is past.
    next_fire_at  timestamptz NOT NULL,
    last_fired_at timestamptz,
    last_job_id   bigint,
    -- Why the last due fire time enqueued nothing (a payload the stage no longer accepts).
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pipeline_schedules_timing_check CHECK ((cron IS NULL) <> (every_s IS NULL))
);
-- The scheduler's tick reads due, unpaused rows only.
CREATE INDEX pipeline_schedules_due ON pipeline_schedules (next_fire_at) WHERE NOT paused;
