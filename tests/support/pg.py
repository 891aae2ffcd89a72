"""Test databases: DATABASE_URL's server, or an embedded one the suite starts and deletes."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from pg_pipeline.embedded import embedded_url, restart_embedded, stop_embedded
from pg_pipeline.migrate import migrate

TEMPLATE = "pipeline_test_template"


def server_url(scratch: Path) -> str:
    configured = os.environ.get("DATABASE_URL")
    if configured:
        return configured
    url = embedded_url(scratch / "pgdata")
    # The suite's own server holds nothing worth an fsync: its data directory is deleted at
    # the end. fsync guards against an operating-system crash only; a killed PostgreSQL (the
    # chaos tests) recovers from its WAL either way. With it on, every test's DROP DATABASE
    # waited for a checkpoint's fsyncs: 1.2-1.6 s a test here, against 0.02-0.04 s.
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("ALTER SYSTEM SET fsync = off")
        admin.execute("SELECT pg_reload_conf()")
    return url


def with_db(url: str, dbname: str) -> str:
    return make_conninfo(url, dbname=dbname)


def build_template(url: str) -> None:
    """A migrated database that every integration test clones, so no test migrates."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{TEMPLATE}"')
    with psycopg.connect(with_db(url, TEMPLATE), autocommit=True) as conn:
        migrate(conn)


@contextmanager
def _scratch_database(url: str, clause: str) -> Iterator[str]:
    name = f"pipeline_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"{clause}')
    try:
        yield with_db(url, name)
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def cloned_database(url: str) -> contextlib.AbstractContextManager[str]:
    """A fresh copy of the migrated template, dropped afterwards."""
    return _scratch_database(url, f' TEMPLATE "{TEMPLATE}"')


def empty_database(url: str) -> contextlib.AbstractContextManager[str]:
    """A database with no schema at all, dropped afterwards."""
    return _scratch_database(url, "")


stop_server = stop_embedded
restart_server = restart_embedded


def prepared_statements(conn: psycopg.Connection[Any], holding: str) -> int:
    """The statements `conn`'s session has prepared whose text holds `holding` (an EXPLAIN of
    one, which a test may run beside it, not counted)."""
    return len(prepared_plans(conn, holding))


def prepared_plans(conn: psycopg.Connection[Any], holding: str) -> list[tuple[int, int]]:
    """How often each of those statements ran with a generic plan and with a custom one."""
    rows = conn.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
        "WHERE statement LIKE %s AND statement NOT LIKE 'EXPLAIN%%'",
        ("%" + holding + "%",),
        prepare=False,
    ).fetchall()
    return [(int(generic), int(custom)) for generic, custom in rows]


@contextmanager
def protocol_trace(conn: psycopg.Connection[Any]) -> Iterator[list[str]]:
    """What `conn` sends (F) and receives (B) meanwhile, one protocol message a line as libpq's
    trace writes it without timestamps: 'F\\t10\\tQuery\\t "BEGIN"'. Filled when the block ends.
    Each round trip ends with the server's ReadyForQuery (round_trips)."""
    lines: list[str] = []
    with tempfile_path() as path:
        fd = os.open(path, os.O_WRONLY)
        try:
            conn.pgconn.trace(fd)
            conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
            try:
                yield lines
            finally:
                conn.pgconn.untrace()  # flushes what libpq wrote
        finally:
            os.close(fd)
        lines.extend(path.read_text().splitlines())


def round_trips(trace: list[str]) -> int:
    """The round trips of a protocol_trace: the server's ReadyForQuery, one each."""
    return sum(1 for line in trace if line.split("\t")[:3:2] == ["B", "ReadyForQuery"])


@contextmanager
def tempfile_path() -> Iterator[Path]:
    import tempfile

    fd, name = tempfile.mkstemp(prefix="pgp-trace-")
    os.close(fd)
    try:
        yield Path(name)
    finally:
        Path(name).unlink(missing_ok=True)
