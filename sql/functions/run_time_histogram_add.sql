-- The step of the aggregate pipeline.run_time_histogram(run_s, weight): `weight` more jobs of
-- run time `run_s` seconds in a histogram of RUN_TIME_BUCKETS (73) counts. Bucket 1 holds runs
-- under a millisecond; bucket k > 1 holds [2^((k-2)/3), 2^((k-1)/3)) ms, each about 26% wider
-- than the one before, so a percentile read from it (pipeline.histogram_quantile) is off by
-- at most half a bucket, 13%, whatever the run times; the last bucket takes everything from
-- 2^(71/3) ms (3.7 hours) up. A fixed length, so that two histograms add element by element.
-- A job without a run time (NULL) adds nothing; a state left NULL is "no timed job".
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
    IF run_s < 0.001 THEN
        bucket := 1;
    ELSE
        -- 3 * log2(ms) + 2; ln() on a double precision, not log(2, x), which is numeric and slow.
        bucket := least(floor(3 * ln(run_s * 1000) / 0.6931471805599453)::integer + 2, 73);
    END IF;
    hist[bucket] := hist[bucket] + weight;
    RETURN hist;
END
$$;
