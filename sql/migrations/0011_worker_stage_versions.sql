-- Each worker says which version of each stage's input model it runs, so that during a rolling
-- deploy a worker whose model rejects a job's payload can tell whether a live worker runs
-- another version of the stage (which may accept it) and leave the job to it, rather than fail
-- it. {stage: fingerprint}; a worker of an older package writes nothing here ('{}').
ALTER TABLE pipeline_workers ADD COLUMN stage_versions jsonb NOT NULL DEFAULT '{}';
