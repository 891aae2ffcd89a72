-- The step of the aggregate pipeline.run_time_histogram(run_s, weight): `weight` more jobs of
-- run time `run_s` seconds in a histogram of RUN_TIME_BUCKETS (73) counts, in the bucket
-- pipeline.run_time_bucket says. A fixed length, so that two histograms add element by element.
-- A job without a run time (NULL) adds nothing; a state left NULL is "no timed job". Once per
-- job: the rollups build their histograms with pipeline.run_time_histogram_of instead; the
-- aggregate remains for migration 0016, which counted the history there was.
CREATE OR REPLACE FUNCTION pipeline.run_time_histogram_add(
    hist integer[], run_s double precision, weight integer
) RETURNS integer[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    bucket integer;
BEGIN
    IF run_s IS NULL THEN
        RETURN hist;
    END IF;
    IF hist IS NULL THEN
        hist := array_fill(0, ARRAY[73]);
    END IF;
    bucket := pipeline.run_time_bucket(run_s);
    hist[bucket] := hist[bucket] + weight;
    RETURN hist;
END
$$;
