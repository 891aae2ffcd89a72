-- Crash attribution and bounded releases. A job whose worker died is not charged an attempt for
-- that alone: it becomes a suspect and next runs in a child process, where a crash is its own.
-- attempts is then refunded, so the fencing token must be a counter that never goes down.

-- Incremented by every claim and never decremented: (id, claims) names one claim for good.
ALTER TABLE jobs ADD COLUMN claims integer NOT NULL DEFAULT 0
    CONSTRAINT jobs_claims_check CHECK (claims >= 0);
-- Its lease once expired under it: it runs isolated from now on.
ALTER TABLE jobs ADD COLUMN suspect boolean NOT NULL DEFAULT false;
-- Reclaims that refunded the attempt; bounded so that a mis-attributed job cannot loop.
ALTER TABLE jobs ADD COLUMN crash_reclaims integer NOT NULL DEFAULT 0;
-- Shutdown releases that refunded the attempt; bounded likewise.
ALTER TABLE jobs ADD COLUMN releases integer NOT NULL DEFAULT 0;
UPDATE jobs SET claims = attempts;

-- An output belongs to the job that made it, so that reuse after a crash is exact: a re-run of
-- the same job finds its own output, and two jobs of one stage in a run never share one. part
-- (a page number) stays unique within (run, stage) when the stage declares it.
ALTER TABLE job_outputs DROP CONSTRAINT job_outputs_pkey;
ALTER TABLE job_outputs ALTER COLUMN part DROP NOT NULL;
ALTER TABLE job_outputs ALTER COLUMN part DROP DEFAULT;
ALTER TABLE job_outputs ADD CONSTRAINT job_outputs_pkey PRIMARY KEY (job_id);
CREATE UNIQUE INDEX job_outputs_part ON job_outputs (root_id, stage, part) WHERE part IS NOT NULL;
CREATE INDEX job_outputs_run ON job_outputs (root_id, stage);
