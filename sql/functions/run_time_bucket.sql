-- The bucket (1..73) of a run-time histogram that a run of `run_s` seconds falls in: bucket 1
-- holds runs under a millisecond; bucket k > 1 holds [2^((k-2)/3), 2^((k-1)/3)) ms, each about
-- 26% wider than the one before, so a percentile read from the histogram
-- (pipeline.histogram_quantile) is off by at most half a bucket, 13%, whatever the run times;
-- the last bucket takes everything from 2^(71/3) ms (3.7 hours) up. NULL for no run time.
-- The one place the buckets are spelled: the rollups (roll_up_finished) bucket every job they
-- count with it, and the aggregate's step (run_time_histogram_add) too.
--
-- One expression and no SET clause, so that the planner inlines it: the rollups call it for
-- every finished job, where a PL/pgSQL call per job cost about 2 us a job.
-- Without SET, its body is parsed with the caller's search_path, hence every name and
-- operator qualified. 3 * log2(ms) + 2, by ln() of a double precision: log(2, x) is numeric,
-- and slow.
CREATE OR REPLACE FUNCTION pipeline.run_time_bucket(run_s double precision) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN run_s OPERATOR(pg_catalog.<) 0.001 THEN 1
        -- WHEN, not ELSE: least() ignores the NULL that ln() makes of no run time, and made
        -- it 73, the bucket the rollups then counted every untimed job in.
        WHEN run_s OPERATOR(pg_catalog.>=) 0.001
        THEN least(pg_catalog.floor(3 OPERATOR(pg_catalog.*)
                                    pg_catalog.ln(run_s OPERATOR(pg_catalog.*) 1000)
                                    OPERATOR(pg_catalog./) 0.6931471805599453)::integer
                   OPERATOR(pg_catalog.+) 2,
                   73)
    END
$$;
