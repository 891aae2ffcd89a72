"""Bring a database to this package's schema: numbered migrations, then the function files.

Two kinds of file, changed in two ways:

- sql/migrations/NNNN_name.sql: tables, columns, indexes, types, views, the definitions of
  triggers, and data changes. Each is applied once, in order, and recorded in
  pipeline.migrations. One that has shipped is never edited: a schema change is a new file.
- sql/functions/NAME.sql: one function each (`CREATE OR REPLACE FUNCTION pipeline.NAME`), the
  only place its body is spelled. To change a function, edit its file: migrate() applies a file
  again whenever its content differs from the content it applied last (a hash in
  pipeline.functions). CREATE OR REPLACE cannot change a function's arguments or result type:
  such a change also needs a migration that drops the old function.

All in one transaction under an advisory lock (two processes migrating at once take turns, and
the second finds nothing left to do), in this order:

1. trigger functions the database lacks, and functions a migration calls
   (MIGRATION_CALLS), unchecked (check_function_bodies off, as pg_dump does), since a
   migration's CREATE TRIGGER names its function, and the function's declarations may name a
   table that migration makes;
2. the pending migrations;
3. every function file whose content changed, or all of them when a migration ran (it may have
   dropped or altered what they are built on), checked. A file comes after the files whose
   functions it calls: a SQL-language function's body is checked against what exists when it
   is created;
4. the history's daily partitions for today and the HISTORY_DAYS_AHEAD days after it, where
   they are missing (the worker's Partitions service keeps them ahead from then on).

A database that has applied a migration this package does not know belongs to a newer package:
its functions are left as they are.

Everything goes in the schema of the connection (connect(schema=)), or of the `schema`
argument: PIPELINE_SCHEMA, else `pipeline` (see pipeline/queries.py). It is made when missing.
Migrations 0001-0011 predate it: they name their objects unqualified, and run with the
search_path set to where their objects are. Migration 0012 moves what they made into the
schema, so an installation of that time (its tables in the schema its search_path found
first, `public` as a rule, beside the application's) upgrades in place, in this same
transaction, with its jobs, claims and joins as they were; its bookkeeping tables move first.
A fresh database runs 0001-0011 in the schema itself, so that 0012's moves are no-ops and both
end the same. The trigger functions 0001-0011 name are renamed by 0012: where they are missing
they are stood in for by empty ones, until 0012 drops them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, LiteralString

import psycopg

from pg_pipeline.db import schema_of
from pg_pipeline.history import HISTORY_DAYS_AHEAD
from pg_pipeline.queries import (
    FunctionFile,
    check_schema,
    function_hash,
    function_texts,
    in_schema,
    load_functions,
    load_migrations,
    migration_names,
    queries_for,
)

log = logging.getLogger(__name__)


@dataclass
class Applied:
    """What one migrate() call applied: migration versions, and function files by name."""

    migrations: list[int] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)


#: The last migration that names its objects unqualified, made before the schema of its own.
LAST_UNQUALIFIED = 11
#: Functions that a migration calls (0013 makes the history's partitions with one) or names
#: (0016's aggregates and views, over the rollups' histograms): made before the migrations when
#: missing, like trigger functions.
MIGRATION_CALLS = frozenset(
    {
        "make_history_partitions",
        "run_time_histogram_add",
        "run_time_bucket",
        "histogram_add",
        "histogram_quantile",
        "run_status",
    }
)


def migrate(conn: psycopg.Connection[Any], *, schema: str | None = None) -> list[int]:
    """Apply what this database lacks (see the module's docstring); returns the versions of the
    migrations applied now. `schema`: the installation's, when not the connection's."""
    return apply(conn, schema=schema).migrations


def apply(conn: psycopg.Connection[Any], *, schema: str | None = None) -> Applied:
    """migrate(), saying which function files it applied as well."""
    schema = check_schema(schema) if schema else schema_of(conn)
    q = queries_for(schema)
    applied = Applied()
    with conn.transaction():
        conn.execute(q["migration_lock"])
        legacy = _legacy_schema(conn, schema)
        conn.execute(q["create_schema"])
        # Migrations 0001-0011 name their objects unqualified: they find them here.
        conn.execute(q["set_migration_search_path"], {"schema": legacy or schema})
        if legacy:
            conn.execute(q["adopt_legacy_bookkeeping"])
        conn.execute(q["create_migration_table"])
        conn.execute(q["create_function_table"])
        done = _applied_versions(conn, q)
        migrations = load_migrations()
        ahead = bool(done - {m.version for m in migrations})
        functions = [] if ahead else load_functions()
        if any(m.version <= LAST_UNQUALIFIED and m.version not in done for m in migrations):
            conn.execute(q["stand_in_legacy_trigger_functions"])
        existing = {row[0] for row in conn.execute(q["existing_functions"]).fetchall()}
        early = [
            f
            for f in functions
            if (f.is_trigger or f.name in MIGRATION_CALLS) and f.name not in existing
        ]
        if early:
            # Unchecked (a %ROWTYPE may name a table a migration has yet to make); made again,
            # checked, below, since migrations will have run.
            conn.execute(q["skip_function_checks"])
            for function in early:
                _apply_function(conn, function, schema)
            conn.execute(q["restore_function_checks"])
        for migration in migrations:
            if migration.version in done:
                continue
            conn.execute(in_schema(migration.sql, schema))  # packaged SQL, not input
            conn.execute(
                q["record_migration"], {"version": migration.version, "name": migration.name}
            )
            applied.migrations.append(migration.version)
        recorded = _recorded_hashes(conn, q)
        for function in functions:
            if applied.migrations or recorded.get(function.file) != function.sha256:
                _apply_function(conn, function, schema)
                applied.functions.append(function.name)
        if functions:
            conn.execute(q["make_history_partitions"], {"days_ahead": HISTORY_DAYS_AHEAD})
    if applied.functions:
        log.info("applied function files: %s", ", ".join(applied.functions))
    return applied


def _legacy_schema(conn: psycopg.Connection[Any], schema: str) -> str | None:
    """Where an installation from before the schema of its own keeps its tables: the schema of
    the pipeline_migrations that the connection's search_path finds, when `schema` has no
    bookkeeping of its own yet. None: a fresh database, or one already moved."""
    q = queries_for(schema)
    if _exists(conn, q["migration_table_exists"]):
        return None
    row = conn.execute(q["legacy_schema"]).fetchone()
    return str(row[0]) if row and row[0] else None


def _done_versions(conn: psycopg.Connection[Any], schema: str) -> set[int]:
    """The versions applied, outside migrate()'s transaction: from the schema's bookkeeping, or
    from an installation that predates it."""
    q = queries_for(schema)
    if _exists(conn, q["migration_table_exists"]):
        return _applied_versions(conn, q)
    if _legacy_schema(conn, schema):
        return {row[0] for row in conn.execute(q["legacy_applied_migrations"]).fetchall()}
    return set()


def pending(conn: psycopg.Connection[Any], *, schema: str | None = None) -> list[int]:
    """Versions not yet applied (all of them on a database never migrated)."""
    done = _done_versions(conn, check_schema(schema) if schema else schema_of(conn))
    return [version for version, _ in migration_names() if version not in done]


def pending_changes(conn: psycopg.Connection[Any], *, schema: str | None = None) -> list[str]:
    """Everything migrate() would apply, by file: migrations ("0010_name") and function files
    ("functions/NAME.sql"). Empty when the database is up to date."""
    schema = check_schema(schema) if schema else schema_of(conn)
    done = _done_versions(conn, schema)
    return _changes(done, lambda: _function_hashes(conn, schema))


def check_on_start(
    conn: psycopg.Connection[Any], *, schema: str | None = None
) -> tuple[int | None, list[str]]:
    """What a command asks of its new connection before its own statements: the pid of the
    backend serving it (db.fit_to_pooler's probe: None when not read), and pending_changes().

    One statement, where the database has its bookkeeping tables; on one without them (never
    migrated, or from before the schema or the function files) that statement fails and
    pending_changes() asks the long way. `conn` is in autocommit, so that the failure costs no
    transaction.
    """
    schema = check_schema(schema) if schema else schema_of(conn)
    q = queries_for(schema)
    try:
        row = conn.execute(q["start_check"], prepare=False).fetchone()
    except psycopg.errors.UndefinedTable:
        return None, pending_changes(conn, schema=schema)
    assert row is not None  # a SELECT without FROM: one row
    backend_pid, versions, functions = row
    recorded = {file: sha256 for file, sha256 in functions}
    return backend_pid, _changes(set(versions), lambda: recorded)


def pending_functions(conn: psycopg.Connection[Any], *, schema: str | None = None) -> list[str]:
    """Function files whose content this database has not applied (none when the database
    belongs to a newer package)."""
    schema = check_schema(schema) if schema else schema_of(conn)
    done = _done_versions(conn, schema)
    return _changed_functions(done, lambda: _function_hashes(conn, schema), migration_names())


def _changes(done: set[int], recorded: Callable[[], dict[str, str]]) -> list[str]:
    migrations = migration_names()
    return [f"{version:04d}_{name}" for version, name in migrations if version not in done] + [
        f"functions/{name}.sql" for name in _changed_functions(done, recorded, migrations)
    ]


def _changed_functions(
    done: set[int], recorded: Callable[[], dict[str, str]], migrations: list[tuple[int, str]]
) -> list[str]:
    """The function files whose text differs from what `recorded()` (file: hash) says was
    applied, in the order migrate() applies them; none when `done` holds a migration this
    package does not know (the database belongs to a newer one)."""
    if done - {version for version, _ in migrations}:
        return []
    applied = recorded()
    # Every command asks this before its own statements: the files are hashed, and ordered
    # (which parses each of them) only when one of them has changed.
    changed = {
        name
        for name, text in function_texts().items()
        if applied.get(f"{name}.sql") != function_hash(text)
    }
    return [f.name for f in load_functions() if f.name in changed] if changed else []


def _function_hashes(conn: psycopg.Connection[Any], schema: str) -> dict[str, str]:
    q = queries_for(schema)
    return _recorded_hashes(conn, q) if _exists(conn, q["function_table_exists"]) else {}


def _apply_function(conn: psycopg.Connection[Any], function: FunctionFile, schema: str) -> None:
    q = queries_for(schema)
    conn.execute(in_schema(function.sql, schema))  # packaged SQL, not input
    conn.execute(q["record_function"], {"file": function.file, "sha256": function.sha256})


def _applied_versions(conn: psycopg.Connection[Any], q: dict[str, LiteralString]) -> set[int]:
    return {row[0] for row in conn.execute(q["applied_migrations"]).fetchall()}


def _recorded_hashes(conn: psycopg.Connection[Any], q: dict[str, LiteralString]) -> dict[str, str]:
    return {row[0]: row[1] for row in conn.execute(q["applied_functions"]).fetchall()}


def _exists(conn: psycopg.Connection[Any], query: LiteralString) -> bool:
    row = conn.execute(query).fetchone()
    return bool(row and row[0])
