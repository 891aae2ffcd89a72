"""Schema migrations: numbered files in sql/migrations, recorded in pipeline_migrations."""

from __future__ import annotations

from typing import Any

import psycopg

from pipeline.queries import Q, load_migrations


def migrate(conn: psycopg.Connection[Any]) -> list[int]:
    """Apply the migrations this database lacks; returns the versions applied now.

    All of it runs in one transaction under an advisory lock: two processes migrating at once
    take turns, and the second finds nothing left to do.
    """
    applied_now: list[int] = []
    with conn.transaction():
        conn.execute(Q["migration_lock"])
        conn.execute(Q["create_migration_table"])
        done = {row[0] for row in conn.execute(Q["applied_migrations"]).fetchall()}
        for migration in load_migrations():
            if migration.version in done:
                continue
            conn.execute(migration.sql)  # packaged SQL, not input
            conn.execute(
                Q["record_migration"], {"version": migration.version, "name": migration.name}
            )
            applied_now.append(migration.version)
    return applied_now


def pending(conn: psycopg.Connection[Any]) -> list[int]:
    """Versions not yet applied (all of them on a database never migrated)."""
    exists = conn.execute(Q["migration_table_exists"]).fetchone()
    done: set[int] = set()
    if exists and exists[0]:
        done = {row[0] for row in conn.execute(Q["applied_migrations"]).fetchall()}
    return [m.version for m in load_migrations() if m.version not in done]
