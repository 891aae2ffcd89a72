-- What workers know of each stage, recorded when they start (issue 22, item 5), so that a
-- producer or an operator command that does not import the stage's code can name it and have
-- a payload checked against its input model's JSON schema. One row per version of a stage:
-- version is the fingerprint of the input model each worker already advertises in
-- workers.stage_versions, so during a rolling deploy the old and the new model are both here,
-- and a live worker's stage_versions says which of them are running.
CREATE TABLE pipeline.stages (
    name          text        NOT NULL,
    version       text        NOT NULL,
    -- pydantic's model_json_schema() of the input model (validation mode) and of the output
    -- model (serialization mode); NULL when the model has none (a field type without one) or,
    -- for the output, when the stage returns nothing.
    input_schema  jsonb,
    output_schema jsonb,
    then_stage    text,
    -- The stage's defaults a job enqueued by name takes, as the last worker to record it had them.
    max_attempts  integer     NOT NULL,
    lease_seconds integer     NOT NULL,
    priority      smallint    NOT NULL,
    tenant_cap    integer,
    recorded_by   uuid        NOT NULL,
    hostname      text        NOT NULL,
    recorded_at   timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT stages_pkey PRIMARY KEY (name, version)
);
