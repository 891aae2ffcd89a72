from __future__ import annotations

import threading
from typing import Any

import psycopg

from pipeline.migrate import migrate, pending
from pipeline.queries import load_migrations, sql_text
from tests import pg

CATALOG = {
    "columns": """
        SELECT table_name, column_name, data_type, is_nullable, column_default, is_identity
        FROM information_schema.columns WHERE table_schema = 'public'
          AND table_name <> 'pipeline_migrations' ORDER BY 1, 2""",
    "indexes": """
        SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = 'public' AND tablename <> 'pipeline_migrations' ORDER BY 1, 2""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
        WHERE connamespace = 'public'::regnamespace
          AND conrelid::regclass::text <> 'pipeline_migrations' ORDER BY 1, 2""",
    "reloptions": """
        SELECT relname, reloptions FROM pg_class
        WHERE relnamespace = 'public'::regnamespace AND reloptions IS NOT NULL ORDER BY 1""",
    "functions": """
        SELECT proname, pg_get_functiondef(oid) FROM pg_proc
        WHERE pronamespace = 'public'::regnamespace ORDER BY 1""",
    "triggers": """
        SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1""",
    "composite types": """
        SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod)
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        WHERE c.relkind = 'c' AND c.relnamespace = 'public'::regnamespace
          AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1, 2""",
    # The monitoring views' names, columns and comments are an interface: compared too.
    "views": """
        SELECT viewname, definition, obj_description(format('%I', viewname)::regclass, 'pg_class')
        FROM pg_views WHERE schemaname = 'public' ORDER BY 1""",
}


def catalog(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(url) as conn:
        return {name: conn.execute(q).fetchall() for name, q in CATALOG.items()}  # type: ignore[arg-type]


def test_migrations_build_exactly_the_schema_file(server_url: str) -> None:
    with pg.empty_database(server_url) as migrated, pg.empty_database(server_url) as direct:
        with psycopg.connect(migrated, autocommit=True) as conn:
            migrate(conn)
        with psycopg.connect(direct, autocommit=True) as conn:
            conn.execute(sql_text("schema.sql"))  # type: ignore[arg-type]
        from_migrations, from_schema = catalog(migrated), catalog(direct)
    assert from_migrations["columns"], "the catalog query found no tables"
    assert from_migrations == from_schema


def test_migrate_is_idempotent_and_records_versions(server_url: str) -> None:
    with pg.empty_database(server_url) as url, psycopg.connect(url, autocommit=True) as conn:
        assert pending(conn) == [m.version for m in load_migrations()]
        assert migrate(conn) == [m.version for m in load_migrations()]
        assert migrate(conn) == []
        assert pending(conn) == []


def test_two_processes_migrating_at_once_both_succeed(server_url: str) -> None:
    with pg.empty_database(server_url) as url:
        results: list[list[int]] = []
        errors: list[BaseException] = []
        barrier = threading.Barrier(4)

        def run() -> None:
            try:
                with psycopg.connect(url, autocommit=True) as conn:
                    barrier.wait()
                    results.append(migrate(conn))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        applied = sorted(results, key=len)
        assert applied[:-1] == [[], [], []]
        assert applied[-1] == [m.version for m in load_migrations()]
