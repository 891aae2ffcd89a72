"""pg-pipeline's own migrations (sql/migrations, sql/functions), run on a Django connection."""

from __future__ import annotations

from typing import Any

import psycopg

from pg_pipeline.connections import sync_connection
from pg_pipeline.contrib.django import database_alias
from pg_pipeline.migrate import migrate


def apply_migrations(django_connection: Any) -> list[int]:
    """Bring the database of `django_connection` to pg-pipeline's schema, if it is the alias
    PG_PIPELINE_DATABASE names; returns the versions applied (none on other aliases)."""
    if django_connection.alias != database_alias():
        return []
    raw = sync_connection(django_connection, api="migrate")
    # Django's connections bind parameters on the client and read jsonb as text: pg-pipeline's
    # migrations run with psycopg's own cursor, as `pipeline migrate` runs them.
    factory = raw.cursor_factory
    raw.cursor_factory = psycopg.Cursor
    try:
        return migrate(raw)
    finally:
        raw.cursor_factory = factory


def create_schema(apps: Any, schema_editor: Any) -> None:
    """RunPython of migration 0001."""
    apply_migrations(schema_editor.connection)
