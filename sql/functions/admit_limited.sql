-- The claim's rate-limit admission (docs/limits.md): of the jobs the claim picked that carry
-- charges (p_ids, in its order, every one locked by it, each with its active_jobs.limits in
-- p_charges, computed at enqueue), those it must leave queued because a limit they are charged
-- to has no room in its window. pipeline.claim calls it (through pipeline.admit_picks) before
-- the UPDATE that claims: a refused job gets no attempt and no slot, and keeps its place.
--
-- The window: a key's consumption is kept per second (pipeline.rate_limit_used, stamped with
-- the claim's now()); a claim at second S may charge a key only while the units in its buckets
-- from S - per + 1 on, later ones included, plus the new charge stay within its capacity
-- (pipeline.rate_limits: the key's own row, else the limit's '*' row; no row: no limit).
--
-- Exact across claimers. The key is locked first (a transaction-level advisory lock, held to
-- the claim's commit), so the claims charging one key take turns; the buckets are read by a
-- later statement, whose snapshot sees every charge committed by the holders before. With
-- p_wait (a claim's first step) the keys are waited for, all in one statement and one order:
-- a claimer that skipped a busy key would refuse its jobs and find nothing, while its holder
-- needs a millisecond more. Later steps, which may already hold keys, skip a busy key (a try
-- lock): its jobs are refused this time, and nobody waits in a circle. Proof:
-- take any `per` consecutive seconds W and, of the claims that charged a bucket in W, the one
-- that held the key's lock last, at second S in W. It summed every bucket from S - per + 1 on,
-- which covers all of W, and saw every earlier holder's charges to W; no later holder charged
-- W. So what W holds is what it saw plus what it charged, within the capacity. A bucket is
-- deleted only once it is older than any window a claim still running may sum (DELETE below),
-- and stamps from a claimer whose now() ran ahead are summed too (no upper bound): a window
-- can only be counted too full, never too empty.
--
-- Two exceptions, said in docs/limits.md: a correction after the run (limit_correct in
-- sql/queries_limits.sql) can push a window past its capacity after the fact, and then claims
-- wait until it has passed; a single job charged more than the whole capacity is admitted
-- alone, into a window that holds nothing else, rather than never (a capacity of 0 pauses:
-- nothing is admitted).
--
-- Order: a key that refuses a job refuses every later job of the claim, so that small jobs do
-- not starve a large one; jobs charged to other keys go ahead.
CREATE OR REPLACE FUNCTION pipeline.admit_limited(
    p_ids bigint[], p_charges jsonb[], p_wait boolean
)
RETURNS bigint[]
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    now_s bigint := floor(extract(epoch FROM now()))::bigint;
    -- Kept longer than any window: a claim whose now() is behind the deleter's by less than this
    -- still finds every bucket its window covers.
    keep_s constant integer := 300;
    -- The advisory locks' first key: rate limits' keys, among whatever else takes such locks.
    key_locks constant integer := hashtext('pg_pipeline rate limit keys');
    c_ids bigint[];  -- one entry per (job, charge), in the claim's order
    c_kids text[];
    c_units bigint[];
    wanted_names text[];  -- the keys charged
    wanted_keys text[];
    kids text[];  -- the keys locked here: id, capacity, per, room left, charged, refusing
    k_names text[];
    k_keys text[];
    caps bigint[];
    pers integer[];
    rooms bigint[];
    charged bigint[];
    blocked boolean[];
    refused bigint[] := '{}';
    total integer;
    i integer := 1;
    last integer;
    at integer;
    fits boolean;
BEGIN
    SELECT array_agg(k.id ORDER BY k.o, e.n),
           array_agg(jsonb_build_array(e.v ->> 'name', e.v ->> 'key')::text ORDER BY k.o, e.n),
           array_agg((e.v ->> 'units')::bigint ORDER BY k.o, e.n)
    INTO c_ids, c_kids, c_units
    FROM unnest(p_ids, p_charges) WITH ORDINALITY AS k(id, limits, o)
    CROSS JOIN LATERAL jsonb_array_elements(k.limits) WITH ORDINALITY AS e(v, n);
    total := coalesce(array_length(c_ids, 1), 0);
    IF total = 0 THEN
        RETURN refused;
    END IF;
    SELECT array_agg(w.kid::jsonb ->> 0 ORDER BY w.kid),
           array_agg(w.kid::jsonb ->> 1 ORDER BY w.kid)
    INTO wanted_names, wanted_keys
    FROM (SELECT DISTINCT unnest(c_kids) AS kid) AS w;

    -- Lock the keys: a transaction-level advisory lock each, (KEY_LOCKS, a hash of the key),
    -- which costs no write, unlike a row lock. Two keys that share a hash only take turns.
    IF p_wait THEN
        -- All at once, in one order: claimers waiting so for each other's keys cannot wait in
        -- a circle, and none of them waits for anything else after.
        PERFORM count(pg_advisory_xact_lock(key_locks, h.h))
        FROM (SELECT DISTINCT hashtext(w.name || E'\x1f' || w.key) AS h
              FROM unnest(wanted_names, wanted_keys) AS w(name, key)
              ORDER BY 1) AS h;
        k_names := wanted_names;
        k_keys := wanted_keys;
    ELSE
        SELECT array_agg(w.name), array_agg(w.key) INTO k_names, k_keys
        FROM unnest(wanted_names, wanted_keys) AS w(name, key)
        WHERE pg_try_advisory_xact_lock(key_locks, hashtext(w.name || E'\x1f' || w.key));
    END IF;

    -- A statement after the lock: its snapshot holds every charge of the key's earlier holders.
    SELECT array_agg(jsonb_build_array(w.name, w.key)::text ORDER BY w.o),
           array_agg(c.units ORDER BY w.o), array_agg(c.per_seconds ORDER BY w.o),
           array_agg(c.units - coalesce(
               (SELECT sum(u.units) FROM pipeline.rate_limit_used AS u
                WHERE u.name = w.name AND u.key = w.key AND u.second > now_s - c.per_seconds),
               0) ORDER BY w.o)
    INTO kids, caps, pers, rooms
    FROM unnest(k_names, k_keys) WITH ORDINALITY AS w(name, key, o)
    LEFT JOIN LATERAL (
        SELECT r.units, r.per_seconds FROM pipeline.rate_limits AS r
        WHERE r.name = w.name AND r.key IN (w.key, '*')
        ORDER BY r.key = '*'
        LIMIT 1
    ) AS c ON true;
    charged := array_fill(0::bigint, ARRAY[coalesce(array_length(kids, 1), 0)]);
    blocked := array_fill(false, ARRAY[coalesce(array_length(kids, 1), 0)]);

    -- Each job, in order, whole or not at all: all its charges fit, or none is made.
    WHILE i <= total LOOP
        last := i;
        WHILE last < total AND c_ids[last + 1] = c_ids[i] LOOP
            last := last + 1;
        END LOOP;
        fits := true;
        FOR x IN i..last LOOP
            at := array_position(kids, c_kids[x]);
            IF at IS NULL OR blocked[at] THEN
                fits := false;  -- another claimer holds the key, or it refused a job before
            ELSIF caps[at] = 0  -- paused: not even a job charged nothing goes
                  OR rooms[at] IS NOT NULL AND c_units[x] > rooms[at]
                  AND NOT (c_units[x] > caps[at] AND rooms[at] = caps[at] AND caps[at] > 0) THEN
                fits := false;
                blocked[at] := true;
            END IF;
        END LOOP;
        IF fits THEN
            FOR x IN i..last LOOP
                at := array_position(kids, c_kids[x]);
                rooms[at] := rooms[at] - c_units[x];
                charged[at] := charged[at] + c_units[x];
            END LOOP;
        ELSE
            refused := refused || c_ids[i];
        END IF;
        i := last + 1;
    END LOOP;

    -- Buckets no window can cover any more go, of the keys this claim holds (no one else
    -- deletes), in the statement that charges this second's.
    WITH gone AS (
        DELETE FROM pipeline.rate_limit_used AS u
        USING unnest(k_names, k_keys, pers) AS w(name, key, per)
        WHERE u.name = w.name AND u.key = w.key
          AND u.second < now_s - coalesce(w.per, 0) - keep_s
    )
    INSERT INTO pipeline.rate_limit_used AS u (name, key, second, units)
    SELECT w.name, w.key, now_s, w.n
    FROM unnest(k_names, k_keys, charged, caps) AS w(name, key, n, cap)
    WHERE w.n > 0 AND w.cap IS NOT NULL  -- a key without a capacity is not counted
    ORDER BY w.name, w.key
    ON CONFLICT (name, key, second) DO UPDATE SET units = u.units + EXCLUDED.units;
    RETURN refused;
END
$$;
