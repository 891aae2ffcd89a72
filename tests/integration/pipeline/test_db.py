"""pipeline/db.py's pool against a real server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import psycopg.errors
import pytest
from psycopg_pool import ConnectionPool

from pg_pipeline.db import POOLER_ENV, make_pool
from tests.support.pg import prepared_statements

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


@pytest.mark.parametrize(("prepare_at", "after_one_run"), [(None, 0), (0, 1)])
def test_a_pool_prepares_a_statement_at_the_run_it_was_told_else_at_psycopgs_sixth(
    db_url: str, prepare_at: int | None, after_one_run: int
) -> None:
    with make_pool(db_url, max_size=1, prepare_at=prepare_at) as pool, pool.connection() as conn:
        conn.execute("SELECT %s::integer + 41 AS answer", (1,))
        assert prepared_statements(conn, "AS answer") == after_one_run
        for _ in range(5):
            conn.execute("SELECT %s::integer + 41 AS answer", (1,))
        assert prepared_statements(conn, "AS answer") == 1


def test_a_pool_told_to_prepare_at_once_prepares_nothing_through_a_transaction_pooler(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A transaction pooler hands the next transaction another server connection, where the
    # prepared statement is missing: the pooler's setting wins over the caller's.
    monkeypatch.setenv(POOLER_ENV, "transaction")
    with make_pool(db_url, max_size=1, prepare_at=0) as pool, pool.connection() as conn:
        for _ in range(6):
            conn.execute("SELECT %s::integer + 41 AS answer", (1,))
        assert prepared_statements(conn, "AS answer") == 0
