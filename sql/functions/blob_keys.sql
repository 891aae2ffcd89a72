-- The blob keys a text names, each once: what a job's payload (or a stage's output) references
-- in the blob stores (pg_pipeline.blobs.content_key: sha256/, the digest's first two hex
-- digits, /, the 64 hex digits of the digest). Found anywhere in the text, so a key inside a
-- longer string (an S3 object key under a prefix, a URL) counts too; a run of hex longer than
-- a digest does not. The one place the pattern is spelled (pipeline/enqueue.py only asks
-- whether a payload holds `sha256/` at all, before it asks this).
CREATE OR REPLACE FUNCTION pipeline.blob_keys(p_text text) RETURNS SETOF text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT DISTINCT 'sha256/' || m[1] || '/' || m[2]
    FROM regexp_matches(p_text, 'sha256/([0-9a-f]{2})/(\1[0-9a-f]{62})(?![0-9a-f])', 'g') AS m
$$;
