-- Which runs reference which content-addressed blobs (pg_pipeline.blobs), so that retention can
-- delete a blob once no remaining run references it. A row is written in the transaction that
-- enqueues a job whose payload names a blob key (sha256/<2 hex>/<64 hex>), for the job's run,
-- and deleted in the transaction that prunes that run. A blob many runs share (the same bytes
-- uploaded twice) has a row per run and stays until the last one goes. Runs enqueued before
-- this migration have no rows: their blobs are never deleted (no row says they are unused).
CREATE TABLE pipeline.blob_refs (
    blob_key text   NOT NULL,
    run_id   bigint NOT NULL,
    CONSTRAINT blob_refs_pkey PRIMARY KEY (blob_key, run_id)
);
-- Retention deletes a pruned run's rows by run.
CREATE INDEX blob_refs_run ON pipeline.blob_refs (run_id);

-- Blobs whose last reference retention deleted: candidates the blob sweep
-- (pipeline/maintenance/blob_sweep.py) deletes from the store, unless a run references them
-- again by then or the store says they were written or put again within the grace period. A
-- row stays until the sweep deleted its blob (or found it referenced again), so a sweep that
-- failed (the store unreachable) or stopped leaves the rest to the next one.
CREATE TABLE pipeline.blob_garbage (
    blob_key text        NOT NULL CONSTRAINT blob_garbage_pkey PRIMARY KEY,
    since    timestamptz NOT NULL DEFAULT now()  -- when its last reference was deleted
);
