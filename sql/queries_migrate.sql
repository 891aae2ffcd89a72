-- What pipeline/migrate.py reads and records: the numbered migrations applied, and the content
-- of each function file as last applied; and how it finds and moves an installation made before
-- the schema of its own (0012).

-- name: migration_lock
-- Two processes migrating at once queue up here instead of racing on CREATE TABLE.
SELECT pg_advisory_xact_lock(7263941873221);

-- name: create_schema
CREATE SCHEMA IF NOT EXISTS pipeline;

-- name: set_migration_search_path
-- For this transaction: migrations 0001-0011 name their objects unqualified, and make them in
-- that schema (pg_catalog, left out, is searched first).
SELECT set_config('search_path', quote_ident(%(schema)s::text), true);

-- name: legacy_schema
-- An installation from before 0012 kept its tables in the schema its search_path found first
-- (public, as a rule): the schema of the bookkeeping table that this search_path finds.
SELECT c.relnamespace::regnamespace::text
FROM pg_class c WHERE c.oid = to_regclass('pipeline_migrations');

-- name: legacy_applied_migrations
SELECT version FROM pipeline_migrations ORDER BY version;

-- name: adopt_legacy_bookkeeping
-- Under set_migration_search_path (the old installation's schema): its record of migrations
-- moves into the schema and goes on there. The record of function files goes: their files
-- have new names now, and every file is applied again after 0012.
ALTER TABLE pipeline_migrations SET SCHEMA pipeline;
ALTER TABLE pipeline.pipeline_migrations RENAME TO migrations;
ALTER TABLE pipeline.migrations RENAME CONSTRAINT pipeline_migrations_pkey TO migrations_pkey;
DROP TABLE IF EXISTS pipeline_functions;

-- name: stand_in_legacy_trigger_functions
-- Under set_migration_search_path: migrations 0001-0011 make triggers that run functions by
-- their old names, which 0012 drops with those triggers. Where one is missing (a fresh
-- database, or one a migration's trigger is new to), an empty one stands in until then.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['pipeline_notify_enqueued', 'pipeline_join_progress',
                             'pipeline_add_slots', 'pipeline_free_slot', 'pipeline_move_slot',
                             'pipeline_truncate_slots'] LOOP
        IF to_regproc(f) IS NULL THEN
            EXECUTE format('CREATE FUNCTION %I() RETURNS trigger LANGUAGE plpgsql '
                           'AS $body$BEGIN RETURN NULL; END$body$', f);
        END IF;
    END LOOP;
END
$$;

-- name: create_migration_table
CREATE TABLE IF NOT EXISTS pipeline.migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: applied_migrations
SELECT version FROM pipeline.migrations ORDER BY version;

-- name: record_migration
INSERT INTO pipeline.migrations (version, name) VALUES (%(version)s, %(name)s);

-- name: migration_table_exists
SELECT to_regclass('pipeline.migrations') IS NOT NULL;

-- name: create_function_table
-- One row per file of sql/functions: the hash of the content that migrate() applied last.
CREATE TABLE IF NOT EXISTS pipeline.functions (
    file       text        PRIMARY KEY,
    sha256     text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: applied_functions
SELECT file, sha256 FROM pipeline.functions;

-- name: function_table_exists
SELECT to_regclass('pipeline.functions') IS NOT NULL;

-- name: start_check
-- What a command asks of its new connection before its own statements, in one round trip
-- (pipeline/migrate.py, check_on_start): the pid of the backend serving it, which differs from
-- the one libpq was given at login when a connection pooler sits in between (pipeline/db.py),
-- what applied_migrations reads, and applied_functions' rows as [file, sha256] pairs. Fails
-- (undefined_table) on a database without either table, which is then asked the long way.
-- ARRAY(subquery), not array_agg: a third less time on a backend's first statement.
SELECT pg_backend_pid(),
       ARRAY(SELECT version FROM pipeline.migrations),
       ARRAY(SELECT ARRAY[file, sha256] FROM pipeline.functions);

-- name: record_function
INSERT INTO pipeline.functions (file, sha256) VALUES (%(file)s, %(sha256)s)
ON CONFLICT (file) DO UPDATE SET sha256 = excluded.sha256, applied_at = now();

-- name: existing_functions
-- Functions of the schema (its bookkeeping table is there by now).
SELECT p.proname FROM pg_proc p
WHERE p.pronamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'pipeline.migrations'::regclass);

-- name: skip_function_checks
-- Until restore_function_checks or the end of the transaction.
SET LOCAL check_function_bodies = off;

-- name: restore_function_checks
RESET check_function_bodies;

-- name: make_history_partitions
-- The history's partitions for today and the days_ahead days after it (UTC), those missing.
-- migrate() and the worker's Partitions service (pipeline/maintenance/partitions.py) run it.
SELECT pipeline.make_history_partitions(
    (now() AT TIME ZONE 'UTC')::date, (now() AT TIME ZONE 'UTC')::date + %(days_ahead)s::integer);
