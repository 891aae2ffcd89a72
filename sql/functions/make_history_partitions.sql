-- The daily partitions of pipeline.job_history from p_first to p_last (UTC days, both
-- included) that do not exist yet; returns how many it made. There is no default partition
-- (a finished job must land in its day's partition, so that a whole day can be detached and
-- dropped at once, and DETACH ... CONCURRENTLY refuses a table with one), so a day must exist
-- before a job finishes in it: migrate() makes today and the 7 days after, the worker's
-- Partitions service keeps 7 days ahead, and the worker makes the day itself should a finishing
-- write still find none.
--
-- Several callers at once (workers' services, a healing completer, migrate) take turns on an
-- advisory lock held to the end of the caller's transaction, and each finds what the one before
-- made; duplicate_table is caught all the same, for a caller that made one in a transaction of
-- its own without this function. A day covered by a wider partition (the legacy one that
-- migration 0013 made for the days before it ran) is left as it is: 42P17, "would overlap".
CREATE OR REPLACE FUNCTION pipeline.make_history_partitions(p_first date, p_last date)
RETURNS integer
LANGUAGE plpgsql
-- Qualified names only: the caller's search_path has no say.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    day date;
    part text;
    idx record;
    made integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(7263941873224);
    FOR day IN SELECT generate_series(p_first, p_last, interval '1 day')::date LOOP
        part := 'job_history_' || to_char(day, 'YYYYMMDD');
        CONTINUE WHEN to_regclass(format('pipeline.%I', part)) IS NOT NULL;
        BEGIN
            EXECUTE format(
                'CREATE TABLE pipeline.%I PARTITION OF pipeline.job_history '
                'FOR VALUES FROM (%L) TO (%L)',
                part, day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC');
            made := made + 1;
            -- Its indexes named after the history's, as job_history_YYYYMMDD_tenant for
            -- job_history_tenant, rather than PostgreSQL's made-up names: plans say which.
            FOR idx IN
                SELECT i.inhrelid::regclass::text AS child,
                       substr(p.relname, length('job_history_') + 1) AS suffix
                FROM pg_inherits i
                JOIN pg_class c ON c.oid = i.inhrelid
                JOIN pg_class p ON p.oid = i.inhparent
                -- The new day's own indexes (a day of another installation has the same name).
                WHERE c.oid IN (SELECT indexrelid FROM pg_index
                                WHERE indrelid = to_regclass(format('pipeline.%I', part)))
            LOOP
                EXECUTE format('ALTER INDEX %s RENAME TO %I', idx.child, part || '_' || idx.suffix);
            END LOOP;
        EXCEPTION
            WHEN duplicate_table THEN NULL;
            WHEN invalid_object_definition THEN NULL;
        END;
    END LOOP;
    RETURN made;
END
$$;
