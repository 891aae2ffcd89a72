-- Two run-time histograms (pipeline.run_time_histogram_add) added element by element: the
-- rollups' upsert merges a statement's histogram into its minute's row with it, and the
-- aggregate pipeline.histogram_sum sums a window's. NULL is the empty histogram.
CREATE OR REPLACE FUNCTION pipeline.histogram_add(a integer[], b integer[]) RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN a IS NULL THEN b
        WHEN b IS NULL THEN a
        ELSE ARRAY(SELECT coalesce(x, 0) + coalesce(y, 0)
                   FROM unnest(a, b) WITH ORDINALITY AS u(x, y, i)
                   ORDER BY i)
    END
$$;
