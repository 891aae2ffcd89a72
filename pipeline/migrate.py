"""Bring a database to this package's schema: numbered migrations, then the function files.

Two kinds of file, changed in two ways:

- sql/migrations/NNNN_name.sql: tables, columns, indexes, types, views, the definitions of
  triggers, and data changes. Each is applied once, in order, and recorded in
  pipeline_migrations. One that has shipped is never edited: a schema change is a new file.
- sql/functions/NAME.sql: one function each (`CREATE OR REPLACE FUNCTION NAME`), the only place
  its body is spelled. To change a function, edit its file: migrate() applies a file again
  whenever its content differs from the content it applied last (a hash in
  pipeline_functions). CREATE OR REPLACE cannot change a function's arguments or result type:
  such a change also needs a migration that drops the old function.

All in one transaction under an advisory lock (two processes migrating at once take turns, and
the second finds nothing left to do), in this order:

1. trigger functions the database lacks, unchecked (check_function_bodies off, as pg_dump
   does), since a migration's CREATE TRIGGER names its function, and the function's
   declarations may name a table that migration makes;
2. the pending migrations;
3. every function file whose content changed, or all of them when a migration ran (it may have
   dropped or altered what they are built on), checked. A file comes after the files whose
   functions it calls: a SQL-language function's body is checked against what exists when it
   is created.

A database that has applied a migration this package does not know belongs to a newer package:
its functions are left as they are.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, LiteralString

import psycopg

from pipeline.queries import FunctionFile, Q, load_functions, load_migrations

log = logging.getLogger(__name__)


@dataclass
class Applied:
    """What one migrate() call applied: migration versions, and function files by name."""

    migrations: list[int] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)


def migrate(conn: psycopg.Connection[Any]) -> list[int]:
    """Apply what this database lacks (see the module's docstring); returns the versions of the
    migrations applied now."""
    return apply(conn).migrations


def apply(conn: psycopg.Connection[Any]) -> Applied:
    """migrate(), saying which function files it applied as well."""
    applied = Applied()
    with conn.transaction():
        conn.execute(Q["migration_lock"])
        conn.execute(Q["create_migration_table"])
        conn.execute(Q["create_function_table"])
        done = _applied_versions(conn)
        migrations = load_migrations()
        ahead = bool(done - {m.version for m in migrations})
        functions = [] if ahead else load_functions()
        existing = {row[0] for row in conn.execute(Q["existing_functions"]).fetchall()}
        early = [f for f in functions if f.is_trigger and f.name not in existing]
        if early:
            # Unchecked (a %ROWTYPE may name a table a migration has yet to make); made again,
            # checked, below, since migrations will have run.
            conn.execute(Q["skip_function_checks"])
            for function in early:
                _apply_function(conn, function)
            conn.execute(Q["restore_function_checks"])
        for migration in migrations:
            if migration.version in done:
                continue
            conn.execute(migration.sql)  # packaged SQL, not input
            conn.execute(
                Q["record_migration"], {"version": migration.version, "name": migration.name}
            )
            applied.migrations.append(migration.version)
        recorded = _recorded_hashes(conn)
        for function in functions:
            if applied.migrations or recorded.get(function.file) != function.sha256:
                _apply_function(conn, function)
                applied.functions.append(function.name)
    if applied.functions:
        log.info("applied function files: %s", ", ".join(applied.functions))
    return applied


def pending(conn: psycopg.Connection[Any]) -> list[int]:
    """Versions not yet applied (all of them on a database never migrated)."""
    done = _applied_versions(conn) if _exists(conn, Q["migration_table_exists"]) else set()
    return [m.version for m in load_migrations() if m.version not in done]


def pending_changes(conn: psycopg.Connection[Any]) -> list[str]:
    """Everything migrate() would apply, by file: migrations ("0010_name") and function files
    ("functions/NAME.sql"). Empty when the database is up to date."""
    versions = set(pending(conn))
    migrations = [f"{m.version:04d}_{m.name}" for m in load_migrations() if m.version in versions]
    return migrations + [f"functions/{name}.sql" for name in pending_functions(conn)]


def pending_functions(conn: psycopg.Connection[Any]) -> list[str]:
    """Function files whose content this database has not applied (none when the database
    belongs to a newer package)."""
    done = _applied_versions(conn) if _exists(conn, Q["migration_table_exists"]) else set()
    if done - {m.version for m in load_migrations()}:
        return []
    recorded = _recorded_hashes(conn) if _exists(conn, Q["function_table_exists"]) else {}
    return [f.name for f in load_functions() if recorded.get(f.file) != f.sha256]


def _apply_function(conn: psycopg.Connection[Any], function: FunctionFile) -> None:
    conn.execute(function.sql)  # packaged SQL, not input
    conn.execute(Q["record_function"], {"file": function.file, "sha256": function.sha256})


def _applied_versions(conn: psycopg.Connection[Any]) -> set[int]:
    return {row[0] for row in conn.execute(Q["applied_migrations"]).fetchall()}


def _recorded_hashes(conn: psycopg.Connection[Any]) -> dict[str, str]:
    return {row[0]: row[1] for row in conn.execute(Q["applied_functions"]).fetchall()}


def _exists(conn: psycopg.Connection[Any], query: LiteralString) -> bool:
    row = conn.execute(query).fetchone()
    return bool(row and row[0])
