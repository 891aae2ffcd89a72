"""Connections: DATABASE_URL when set, else the embedded server."""

from __future__ import annotations

import os
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from pipeline.errors import DatabaseUnavailable

#: Errors that mean "the database is not there right now"; callers retry them with backoff.
DB_DOWN: tuple[type[Exception], ...] = (psycopg.OperationalError, psycopg.InterfaceError)

CONNECT_TIMEOUT_S = 10  #: seconds a new connection may take before it counts as unreachable


def database_url() -> str:
    configured = os.environ.get("DATABASE_URL")
    if configured:
        return configured
    from pipeline.embedded import embedded_url

    return embedded_url()


def describe(dsn: str) -> str:
    """Where a DSN points, safe to print: host (or socket dir), port and database, no password."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "an unparsable DATABASE_URL"
    host = str(parts.get("host") or "localhost")
    port = str(parts.get("port") or "5432")
    dbname = str(parts.get("dbname") or parts.get("user") or "")
    return f"{host}:{port}/{dbname}"


def connect(dsn: str | None = None, *, autocommit: bool = True) -> psycopg.Connection[Any]:
    """A connection for enqueueing in your own transactions (`with conn.transaction(): ...`).

    Autocommit by default, so a statement outside `conn.transaction()` commits on its own.
    """
    target = dsn or database_url()
    try:
        return psycopg.connect(
            target,
            autocommit=autocommit,
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name="pg-pipeline",
        )
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise DatabaseUnavailable(
            f"cannot connect to PostgreSQL at {describe(target)}: {reason}"
        ) from exc


def make_pool(dsn: str, *, max_size: int, name: str = "pg-pipeline") -> ConnectionPool:
    """A pool of autocommit connections. Broken connections are dropped when returned, so after
    a server restart the first statement fails, the caller retries, and a fresh one is made."""
    return ConnectionPool(
        dsn,
        min_size=1,
        max_size=max_size,
        kwargs={
            "autocommit": True,
            "connect_timeout": CONNECT_TIMEOUT_S,
            "application_name": name,
        },
        timeout=CONNECT_TIMEOUT_S,
        reconnect_timeout=0,  # never give up reconnecting: the worker outlives outages
        name=name,
        open=True,
    )
