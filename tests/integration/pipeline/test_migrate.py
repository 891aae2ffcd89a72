from __future__ import annotations

import dataclasses
import gzip
import importlib
import threading
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pg_pipeline.db import make_pool
from pg_pipeline.migrate import (
    Applied,
    apply,
    migrate,
    pending,
    pending_changes,
    pending_functions,
)
from pg_pipeline.queries import Migration, load_functions, load_migrations, queries_for, sql_text
from pg_pipeline.store import JobStore
from tests.support import pg

# The last release before function bodies moved to sql/functions, as pg_dump saw it (see the
# file's header): an installation that the new migrate() must bring to sql/schema.sql.
# The module, not the function that the pipeline package exports under the same name.
migrate_module = importlib.import_module("pg_pipeline.migrate")

DATABASE_AT_0009 = Path(__file__).parents[1] / "fixtures" / "database_at_0009.sql.gz"

BOOKKEEPING = "('migrations', 'functions')"
#: The columns of a job, as 0009 had them, in a fixed order (the order of the table's columns
#: differs between a fresh installation and an upgraded one).
JOB_COLUMNS = (
    "id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after, "
    "leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id, "
    "join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases, "
    "holds_slot"
)
#: What a schema holds, by kind; %(schema)s is the schema's name.
CATALOG = {
    "columns": f"""
        SELECT table_name, column_name, data_type, is_nullable, column_default, is_identity
        FROM information_schema.columns WHERE table_schema = %(schema)s
          AND table_name NOT IN {BOOKKEEPING} ORDER BY 1, 2""",
    "indexes": f"""
        SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = %(schema)s AND tablename NOT IN {BOOKKEEPING} ORDER BY 1, 2""",
    "constraints": f"""
        SELECT c.relname, n.conname, pg_get_constraintdef(n.oid)
        FROM pg_constraint n JOIN pg_class c ON c.oid = n.conrelid
        WHERE n.connamespace = %(schema)s::regnamespace
          AND c.relname NOT IN {BOOKKEEPING} ORDER BY 1, 2""",
    "reloptions": """
        SELECT relname, reloptions FROM pg_class
        WHERE relnamespace = %(schema)s::regnamespace AND reloptions IS NOT NULL ORDER BY 1""",
    "functions": """
        SELECT proname, pg_get_functiondef(oid) FROM pg_proc
        WHERE pronamespace = %(schema)s::regnamespace AND prokind <> 'a' ORDER BY 1""",
    # pg_get_functiondef refuses an aggregate: its arguments and parts instead.
    "aggregates": """
        SELECT p.proname, pg_get_function_arguments(p.oid), a.aggtransfn::text,
               format_type(a.aggtranstype, NULL), a.agginitval
        FROM pg_proc p JOIN pg_aggregate a ON a.aggfnoid = p.oid
        WHERE p.pronamespace = %(schema)s::regnamespace ORDER BY 1, 2""",
    "triggers": """
        SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
        ORDER BY 1, 2""",
    "composite types": """
        SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod)
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        WHERE c.relkind = 'c' AND c.relnamespace = %(schema)s::regnamespace
          AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1, 2""",
    # The monitoring views' names, columns and comments are an interface: compared too.
    "views": """
        SELECT viewname, definition,
               obj_description(format('%%I.%%I', schemaname, viewname)::regclass, 'pg_class')
        FROM pg_views WHERE schemaname = %(schema)s ORDER BY 1""",
    # Nothing of ours is left anywhere else (an application's own objects excepted).
    "elsewhere": """
        SELECT c.relnamespace::regnamespace::text, c.relname FROM pg_class c
        WHERE c.relnamespace NOT IN (%(schema)s::regnamespace, 'pg_catalog'::regnamespace,
                                     'information_schema'::regnamespace, 'pg_toast'::regnamespace)
          AND c.relname NOT LIKE 'app\\_%%'
        UNION ALL
        SELECT p.pronamespace::regnamespace::text, p.proname FROM pg_proc p
        WHERE p.pronamespace NOT IN (%(schema)s::regnamespace, 'pg_catalog'::regnamespace,
                                     'information_schema'::regnamespace)
        ORDER BY 1, 2""",
}


def catalog(url: str, schema: str = "pipeline") -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(url) as conn:
        return {
            name: conn.execute(q, {"schema": schema}).fetchall()  # type: ignore[arg-type]
            for name, q in CATALOG.items()
        }


def schema_file_catalog(server_url: str) -> dict[str, list[tuple[Any, ...]]]:
    """sql/schema.sql with the function files, in migrate()'s order: trigger functions first,
    unchecked, for the triggers; then every function, checked; then the history's partitions
    that migrate() makes ahead."""
    functions = load_functions()
    with pg.empty_database(server_url) as url:
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
            conn.execute("CREATE SCHEMA pipeline")
            conn.execute("SET LOCAL check_function_bodies = off")
            for function in functions:
                if function.is_trigger or function.name in migrate_module.MIGRATION_CALLS:
                    conn.execute(function.sql)  # type: ignore[arg-type]
            conn.execute("RESET check_function_bodies")
            conn.execute(sql_text("schema.sql"))  # type: ignore[arg-type]
            for function in functions:
                conn.execute(function.sql)  # type: ignore[arg-type]
            conn.execute(
                queries_for("pipeline")["make_history_partitions"],
                {"days_ahead": migrate_module.HISTORY_DAYS_AHEAD},
            )
        return catalog(url)


def test_migrations_build_exactly_the_schema_file(server_url: str) -> None:
    with pg.empty_database(server_url) as migrated:
        with psycopg.connect(migrated, autocommit=True) as conn:
            migrate(conn)
        from_migrations = catalog(migrated)
    assert from_migrations["columns"], "the catalog query found no tables"
    assert from_migrations == schema_file_catalog(server_url)


def load_database_at_0009(url: str) -> None:
    # A connection of its own: the dump empties the search_path for its session.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(gzip.decompress(DATABASE_AT_0009.read_bytes()).decode())  # type: ignore[arg-type]


def fill_the_old_queue(conn: psycopg.Connection[Any]) -> None:
    """Jobs as the 0009 release leaves them: queued, running (some holding a tenant's slot,
    through the old claim), done, and a fan-out waiting on its children."""
    conn.execute(
        "INSERT INTO jobs (type, payload, tenant_id, priority) "
        "SELECT 'ocr', '{}', CASE WHEN g % 3 = 0 THEN NULL ELSE 't' || (g % 4) END, g % 2 "
        "FROM generate_series(1, 60) AS g"
    )
    old_claim = conn.execute(
        "SELECT id FROM pipeline_claim(ARRAY['ocr'], 12, %s, ARRAY['ocr'], ARRAY[2])",
        (uuid.uuid4(),),
    ).fetchall()
    held = conn.execute("SELECT count(*) FROM jobs WHERE holds_slot").fetchone()
    assert old_claim and held and held[0] > 0
    conn.execute("UPDATE jobs SET status = 'done', finished_at = now() WHERE id = %s", old_claim[0])
    conn.execute(
        "INSERT INTO job_joins (id, root_id, total, then_type, then_payload, then_priority, "
        "then_max_attempts, then_lease_seconds) VALUES (1000, 1000, 2, 'merge', '{}', 0, 5, 300)"
    )
    conn.execute(
        "INSERT INTO jobs (type, payload, root_id, join_id) "
        "SELECT 'page', '{}', 1000, 1000 FROM generate_series(1, 2)"
    )


def _complete(url: str, fences: list[tuple[int, int]]) -> set[int]:
    """The worker's own fenced completion, on a pool of its own."""
    pool = make_pool(url, max_size=1)
    try:
        return JobStore(pool).complete(fences)
    finally:
        pool.close()


def drifted(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    """The slot repair's corrections over every pair (one batch)."""
    return conn.execute(
        "SELECT * FROM pipeline.repair_slots('', '', 1000000) WHERE was <> counted"
    ).fetchall()


def test_a_database_at_0009_with_jobs_upgrades_to_exactly_the_schema_file(
    server_url: str,
) -> None:
    with pg.empty_database(server_url) as url:
        load_database_at_0009(url)
        with psycopg.connect(url, autocommit=True) as conn:
            fill_the_old_queue(conn)
            later = [m for m in load_migrations() if m.version > 9]
            assert pending(conn) == [m.version for m in later]
            assert pending_functions(conn) == [f.name for f in load_functions()]
            # What commands check before they start, and migrate when it is not empty.
            assert pending_changes(conn) == [f"{m.version:04d}_{m.name}" for m in later] + [
                f"functions/{f.file}" for f in load_functions()
            ]
            jobs_before = conn.execute(f"SELECT {JOB_COLUMNS} FROM jobs ORDER BY id").fetchall()
            running = conn.execute(
                "SELECT id, claims FROM jobs WHERE status = 'running' ORDER BY id"
            ).fetchall()

            applied = apply(conn)

            assert applied.migrations == [m.version for m in later]
            assert sorted(applied.functions) == sorted(f.name for f in load_functions())
            assert pending_changes(conn) == []
            assert (
                conn.execute(f"SELECT {JOB_COLUMNS} FROM pipeline.jobs ORDER BY id").fetchall()
                == jobs_before
            )
            # Finished jobs moved into the history, the others stayed.
            assert conn.execute("SELECT DISTINCT status FROM pipeline.job_history").fetchall() == [
                ("done",)
            ]
            assert conn.execute(
                "SELECT count(*) FROM pipeline.active_jobs "
                "WHERE status NOT IN ('queued', 'running')"
            ).fetchone() == (0,)
            assert conn.execute("SELECT to_regclass('public.jobs')").fetchone() == (None,)
            # A claim made before the move completes after it, fenced by its (id, claims); a
            # stale fence changes nothing.
            job_id, claim = running[0]
            stale = conn.execute(
                "UPDATE pipeline.active_jobs SET status = 'queued' "
                "WHERE id = %s AND claims = %s AND status = 'running' RETURNING id",
                (job_id, claim - 1),
            ).fetchall()
            assert stale == []
            assert _complete(url, [(job_id, claim)]) == {job_id}
            # The old claim's counts hold for the new functions: nothing to repair.
            assert drifted(conn) == []
            # The new claim serves the old queue, and the join the old trigger counted goes on.
            ready = set(
                conn.execute(
                    "SELECT id FROM pipeline.jobs WHERE status = 'queued' AND tenant_id IS NULL"
                ).fetchall()
            )
            claimed = conn.execute(
                "SELECT id FROM pipeline.claim(ARRAY['ocr', 'page'], 100, %s, "
                "ARRAY['ocr'], ARRAY[2])",
                (uuid.uuid4(),),
            ).fetchall()
            assert ready and ready <= set(claimed)
            held = conn.execute(
                "SELECT tenant_id, count(*) FILTER (WHERE holds_slot) FROM pipeline.jobs "
                "WHERE status = 'running' AND tenant_id IS NOT NULL GROUP BY 1"
            ).fetchall()
            assert held and all(n == 2 for _, n in held), held
            assert drifted(conn) == []
            pages = conn.execute(
                "SELECT id, claims FROM pipeline.active_jobs WHERE type = 'page'"
            ).fetchall()
            assert _complete(url, pages) == {job_id for job_id, _ in pages}
            merge = conn.execute(
                "SELECT count(*) FROM pipeline.jobs WHERE type = 'merge'"
            ).fetchone()
            assert merge == (1,)
        upgraded = catalog(url)
    assert upgraded == schema_file_catalog(server_url)


def test_migrate_is_idempotent_and_records_versions(server_url: str) -> None:
    with pg.empty_database(server_url) as url, psycopg.connect(url, autocommit=True) as conn:
        assert pending(conn) == [m.version for m in load_migrations()]
        assert migrate(conn) == [m.version for m in load_migrations()]
        assert migrate(conn) == []
        assert pending(conn) == []
        assert pending_functions(conn) == []
        assert apply(conn) == Applied()


def test_a_changed_function_file_is_applied_again_once(
    server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pg.empty_database(server_url) as url, psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        edited = [
            dataclasses.replace(f, sql=f.sql.replace("BEGIN\n", "BEGIN\n    -- edited\n", 1))
            if f.name == "repair_slots"
            else f
            for f in load_functions()
        ]
        # The files as read for the check (by name) and for applying them (in order).
        monkeypatch.setattr(
            migrate_module, "function_texts", lambda: {f.name: f.sql for f in edited}
        )
        monkeypatch.setattr(migrate_module, "load_functions", lambda: edited)

        assert pending_functions(conn) == ["repair_slots"]
        assert apply(conn) == Applied(functions=["repair_slots"])
        body = conn.execute("SELECT pg_get_functiondef('pipeline.repair_slots'::regproc)")
        assert "-- edited" in body.fetchone()[0]  # type: ignore[index]
        assert apply(conn) == Applied()
        assert pending_functions(conn) == []


def test_a_migration_that_drops_a_function_gets_it_made_again(
    server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Say a migration changes the claim's group type the hard way: every function built on it
    # goes too, and the same migrate() makes them again from their files.
    dropping = Migration(
        len(load_migrations()) + 1,
        "rebuild_claim_group",
        "ALTER TYPE pipeline.claim_group RENAME TO old_claim_group;"
        "CREATE TYPE pipeline.claim_group AS (type text, tenant_id text, cap integer,"
        " head_priority smallint, head_run_after timestamptz, head_id bigint);"
        "DROP TYPE pipeline.old_claim_group CASCADE;",
    )
    with pg.empty_database(server_url) as url, psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        monkeypatch.setattr(
            migrate_module, "load_migrations", lambda: [*load_migrations(), dropping]
        )
        applied = apply(conn)
        assert applied.migrations == [dropping.version]
        missing = conn.execute(
            "SELECT count(*) FROM unnest(%s::text[]) AS f(name) "
            "WHERE to_regproc('pipeline.' || f.name) IS NULL",
            ([f.name for f in load_functions()],),
        ).fetchone()
        assert missing == (0,)
        conn.execute("SELECT * FROM pipeline.claim(ARRAY['a'], 1, %s, '{}', '{}')", (uuid.uuid4(),))


def test_a_database_migrated_by_a_newer_package_keeps_its_functions(server_url: str) -> None:
    with pg.empty_database(server_url) as url, psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        newer = len(load_migrations()) + 1
        conn.execute("INSERT INTO pipeline.migrations VALUES (%s, 'from_the_future')", (newer,))
        conn.execute("UPDATE pipeline.functions SET sha256 = 'a newer body'")
        assert pending_functions(conn) == []
        assert apply(conn) == Applied()


def migrate_at_once(url: str, run: Any, processes: int = 4) -> list[Any]:
    """Run `run(conn)` in `processes` threads on connections of their own, started together."""
    results: list[Any] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(processes)

    def one() -> None:
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                barrier.wait()
                results.append(run(conn))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(processes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return results


def test_two_processes_migrating_at_once_both_succeed(server_url: str) -> None:
    with pg.empty_database(server_url) as url:
        applied = sorted(migrate_at_once(url, migrate), key=len)
        assert applied[:-1] == [[], [], []]
        assert applied[-1] == [m.version for m in load_migrations()]


def test_processes_upgrading_at_once_apply_the_function_files_once(server_url: str) -> None:
    with pg.empty_database(server_url) as url:
        load_database_at_0009(url)
        applied = sorted(migrate_at_once(url, apply), key=lambda a: len(a.functions))
        assert applied[:-1] == [Applied()] * 3
        assert sorted(applied[-1].functions) == sorted(f.name for f in load_functions())


def test_an_applications_own_jobs_table_is_left_alone(server_url: str) -> None:
    def public(url: str) -> dict[str, list[tuple[Any, ...]]]:
        kinds = ("columns", "indexes", "constraints", "functions", "views")
        return {kind: rows for kind, rows in catalog(url, "public").items() if kind in kinds}

    with pg.empty_database(server_url) as url, psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.jobs (id serial PRIMARY KEY, title text NOT NULL)")
        conn.execute("INSERT INTO public.jobs (title) VALUES ('plumber'), ('baker')")
        before = public(url)

        migrate(conn)

        assert public(url) == before
        rows = conn.execute("SELECT id, title FROM public.jobs ORDER BY id").fetchall()
        assert rows == [(1, "plumber"), (2, "baker")]
        triggers = conn.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'public.jobs'::regclass"
        )
        assert triggers.fetchone() == (0,)
        # Ours is beside it, and nothing else of ours is outside the schema.
        assert conn.execute("SELECT count(*) FROM pipeline.jobs").fetchone() == (0,)
        assert catalog(url)["elsewhere"] == [
            ("public", "jobs"),
            ("public", "jobs_id_seq"),
            ("public", "jobs_pkey"),
        ]


def test_a_database_at_0009_keeps_its_application_tables_where_they_were(
    server_url: str,
) -> None:
    with pg.empty_database(server_url) as url:
        load_database_at_0009(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE public.app_orders (id int PRIMARY KEY)")
            conn.execute("INSERT INTO public.app_orders VALUES (7)")
            migrate(conn)
            assert conn.execute("SELECT id FROM public.app_orders").fetchall() == [(7,)]
        assert catalog(url)["elsewhere"] == []


#: Each day of the history with the index on it named `name`, by the index's oid.
DAY_INDEXES = """
    SELECT t.relname, x.indexrelid, x.indexrelid::regclass::text
    FROM pg_inherits d
    JOIN pg_class t ON t.oid = d.inhrelid
    JOIN pg_index x ON x.indrelid = t.oid
    JOIN pg_inherits a ON a.inhrelid = x.indexrelid
    WHERE d.inhparent = 'pipeline.job_history'::regclass
      AND a.inhparent = %(parent)s::regclass
    ORDER BY 1"""


def test_0032s_stage_index_built_beforehand_day_by_day_is_attached_not_built_again(
    server_url: str,
) -> None:
    # docs/operations.md: at 100 M finished jobs, 0032 would build the (type, id) index of every
    # day in the migration's transaction, the history locked against finishing jobs meanwhile.
    # Built beforehand with CREATE INDEX CONCURRENTLY, day by day under any name, each day's is
    # attached as it is (the same index, renamed), and the migration only links them.
    with pg.cloned_database(server_url) as url, psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX pipeline.job_history_stage")
        conn.execute("DELETE FROM pipeline.migrations WHERE version = 32")
        days = [
            row[0]
            for row in conn.execute(
                "SELECT inhrelid::regclass::text FROM pg_inherits "
                "WHERE inhparent = 'pipeline.job_history'::regclass"
            )
        ]
        assert len(days) > 3, days
        for n, day in enumerate(days):
            conn.execute(f"CREATE INDEX CONCURRENTLY beforehand_{n} ON {day} (type, id)")  # type: ignore[arg-type]
        built = {
            row[0]: row[1]
            for row in conn.execute(
                "SELECT indrelid::regclass::text, indexrelid FROM pg_index "
                "WHERE indexrelid::regclass::text LIKE 'pipeline.beforehand\\_%%'"
            )
        }
        assert len(built) == len(days)

        assert migrate(conn) == [32]

        attached = conn.execute(DAY_INDEXES, {"parent": "pipeline.job_history_stage"}).fetchall()
        assert len(attached) == len(days)
        for day, oid, name in attached:
            assert oid == built[f"pipeline.{day}"], (day, "built again")
            assert name == f"pipeline.{day}_stage"
