-- Versioned outputs and reruns (issue 23, item 8). A stage declares the version of what it does
-- (@stage(version=...), else a fingerprint of its code: StageSpec.code_version); each output is
-- stored with that version and with its run's generation: 0 for the run as it first ran, k for
-- the k-th rerun (`pipeline runs rerun`), which enqueues a finished run's stage again and what
-- follows it. Outputs are never overwritten: each generation's sit beside the others', and the
-- readers return the newest by default. Outputs stored before this have no recorded version
-- (NULL) and are generation 0.
ALTER TABLE pipeline.outputs
    ADD COLUMN generation integer NOT NULL DEFAULT 0,
    ADD COLUMN code_version text;
ALTER TABLE pipeline.outputs DROP CONSTRAINT outputs_pkey;
ALTER TABLE pipeline.outputs ADD CONSTRAINT outputs_pkey PRIMARY KEY (job_id, generation);
DROP INDEX pipeline.outputs_part;
CREATE UNIQUE INDEX outputs_part ON pipeline.outputs (root_id, stage, part, generation)
    WHERE part IS NOT NULL;
DROP INDEX pipeline.outputs_run;
CREATE INDEX outputs_run ON pipeline.outputs (root_id, stage, generation);

-- The code version each worker runs a stage at, beside its input model's version.
ALTER TABLE pipeline.stages ADD COLUMN code_version text;

-- One row per generation of a run after its first: a rerun, whose first_job_id is the first job it
-- enqueued. A job of the run belongs to the newest generation whose first_job_id is at most its
-- id: a rerun is only made when nothing of its run is queued or running, so every job enqueued
-- after it (what its jobs led to) takes a higher id from the same sequence than its own. The
-- unique (run_id, stage, code_version) makes a rerun idempotent per (run, stage, version).
CREATE TABLE pipeline.run_generations (
    run_id       bigint      NOT NULL,
    generation   integer     NOT NULL CONSTRAINT run_generations_generation_check
                                      CHECK (generation > 0),
    stage        text        NOT NULL,
    code_version text        NOT NULL,
    first_job_id bigint      NOT NULL,
    jobs         integer     NOT NULL,
    -- A rerun at the version its stage's stored outputs already have (--force).
    forced       boolean     NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT run_generations_pkey PRIMARY KEY (run_id, generation),
    CONSTRAINT run_generations_version_key UNIQUE (run_id, stage, code_version)
);
