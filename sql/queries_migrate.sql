-- What pipeline/migrate.py reads and records: the numbered migrations applied, and the content
-- of each function file as last applied.

-- name: migration_lock
-- Two processes migrating at once queue up here instead of racing on CREATE TABLE.
SELECT pg_advisory_xact_lock(7263941873221);

-- name: create_migration_table
CREATE TABLE IF NOT EXISTS pipeline_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: applied_migrations
SELECT version FROM pipeline_migrations ORDER BY version;

-- name: record_migration
INSERT INTO pipeline_migrations (version, name) VALUES (%(version)s, %(name)s);

-- name: migration_table_exists
SELECT to_regclass('pipeline_migrations') IS NOT NULL;

-- name: create_function_table
-- One row per file of sql/functions: the hash of the content that migrate() applied last.
CREATE TABLE IF NOT EXISTS pipeline_functions (
    file       text        PRIMARY KEY,
    sha256     text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: applied_functions
SELECT file, sha256 FROM pipeline_functions;

-- name: function_table_exists
SELECT to_regclass('pipeline_functions') IS NOT NULL;

-- name: record_function
INSERT INTO pipeline_functions (file, sha256) VALUES (%(file)s, %(sha256)s)
ON CONFLICT (file) DO UPDATE SET sha256 = excluded.sha256, applied_at = now();

-- name: existing_functions
-- Functions of the schema the migrations write to (the first one on the search path).
SELECT p.proname FROM pg_proc p WHERE p.pronamespace = to_regnamespace(current_schema());

-- name: skip_function_checks
-- Until restore_function_checks or the end of the transaction.
SET LOCAL check_function_bodies = off;

-- name: restore_function_checks
RESET check_function_bodies;
