"""pipeline/db.py's pool against a real server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import psycopg.errors
import pytest
from psycopg_pool import ConnectionPool

from pg_pipeline.db import make_pool

Conn = psycopg.Connection[Any]


@pytest.fixture
def one_connection(db_url: str) -> Iterator[ConnectionPool]:
    """A pool of a single connection, so that a connection it keeps is the one it hands out."""
    p = make_pool(db_url, max_size=1, name="pg-pipeline tests")
    try:
        yield p
    finally:
        p.close()


def backend_pid(conn: Conn) -> int:
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def test_a_pooled_connection_told_the_server_takes_no_writes_is_replaced(
    one_connection: ConnectionPool,
) -> None:
    """After a failover, a connection to the demoted primary must not be handed out again:
    a new one goes where the connection string says now."""
    with one_connection.connection() as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS notes (note text)")
        first = backend_pid(conn)
        # This session now sees what every session of a demoted primary sees.
        conn.execute("SET default_transaction_read_only = on")
    with (
        pytest.raises(psycopg.errors.ReadOnlySqlTransaction),
        one_connection.connection() as conn,
    ):
        assert backend_pid(conn) == first
        conn.execute("INSERT INTO notes VALUES ('refused')")
    with one_connection.connection() as conn:
        assert backend_pid(conn) != first, "the read-only connection was handed out again"
        conn.execute("INSERT INTO notes VALUES ('written')")


def test_a_pooled_connection_that_met_a_refusal_is_kept(one_connection: ConnectionPool) -> None:
    """Only the read-only state costs a connection: a refused statement does not."""
    with one_connection.connection() as conn:
        first = backend_pid(conn)
    with pytest.raises(psycopg.errors.DivisionByZero), one_connection.connection() as conn:
        conn.execute("SELECT 1 / 0")
    with one_connection.connection() as conn:
        assert backend_pid(conn) == first
