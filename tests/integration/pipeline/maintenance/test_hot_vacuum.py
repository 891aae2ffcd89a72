"""The hot table's vacuum against real Postgres: a round vacuums once the dead rows pass the
threshold and not before, passes the table over while another vacuum holds it, backs off while
an old snapshot keeps the dead rows, and a role that may not vacuum the table is told once."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool

from pg_pipeline.db import make_pool
from pg_pipeline.maintenance import HotVacuum
from tests.support.pgbouncer import PgBouncer
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
DEAD_ROWS = 1_000  #: the tests' threshold
LIVE = 100  #: queued jobs the table holds throughout


@pytest.fixture(autouse=True)
def quiet_table(conn: Conn) -> None:
    """The table with LIVE queued jobs, and no autovacuum of its own: the counts are the
    test's alone to move."""
    conn.execute("ALTER TABLE pipeline.active_jobs SET (autovacuum_enabled = false)")
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type) SELECT 'noop' FROM generate_series(1, %s)",
        (LIVE,),
    )
    flush_stats(conn)


def flush_stats(conn: Conn) -> None:
    """This session's counts into the shared statistics as its statement ends, not up to a
    second later."""
    conn.execute("SELECT pg_stat_force_next_flush()")


def make_dead_rows(conn: Conn, rows: int) -> None:
    """`rows` jobs enqueued and deleted, as many dead rows as they were; then wait until the
    statistics count them."""
    [(before,)] = conn.execute(
        "SELECT pg_stat_get_dead_tuples('pipeline.active_jobs'::regclass)"
    ).fetchall()
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload) "
        "SELECT 'noop', jsonb_build_object('dead', true) FROM generate_series(1, %s)",
        (rows,),
    )
    conn.execute("DELETE FROM pipeline.active_jobs WHERE payload ? 'dead'")
    flush_stats(conn)
    wait_for(lambda: dead(conn) >= before + rows, what="the statistics to count the dead rows")


def dead(conn: Conn) -> int:
    [(n,)] = conn.execute(
        "SELECT pg_stat_get_dead_tuples('pipeline.active_jobs'::regclass)"
    ).fetchall()
    return int(n)


def vacuums(conn: Conn) -> int:
    """Manual vacuums of the table so far (autovacuum's are counted apart)."""
    [(n,)] = conn.execute(
        "SELECT pg_stat_get_vacuum_count('pipeline.active_jobs'::regclass)"
    ).fetchall()
    return int(n)


def test_a_round_vacuums_the_table_once_its_dead_rows_pass_the_threshold(
    conn: Conn, pool: ConnectionPool
) -> None:
    make_dead_rows(conn, 2 * DEAD_ROWS)
    result = HotVacuum(pool, dead_rows=DEAD_ROWS).run_once()
    assert result.vacuumed and not result.skipped
    assert result.table is not None and result.table.dead >= 2 * DEAD_ROWS
    assert vacuums(conn) == 1
    assert dead(conn) < DEAD_ROWS
    assert result.left is not None and result.left < DEAD_ROWS


def test_a_round_under_the_threshold_leaves_the_table_alone(
    conn: Conn, pool: ConnectionPool
) -> None:
    make_dead_rows(conn, DEAD_ROWS // 2)
    result = HotVacuum(pool, dead_rows=DEAD_ROWS).run_once()
    assert not result.vacuumed
    assert result.table is not None and result.table.dead >= DEAD_ROWS // 2
    assert vacuums(conn) == 0


def test_a_round_passes_the_table_over_while_another_vacuum_holds_it(
    db_url: str, conn: Conn, pool: ConnectionPool
) -> None:
    make_dead_rows(conn, 2 * DEAD_ROWS)
    # The lock a vacuum holds (another worker's, autovacuum's), held for as long as the test
    # likes.
    with psycopg.connect(db_url) as other:
        other.execute("LOCK TABLE pipeline.active_jobs IN SHARE UPDATE EXCLUSIVE MODE")
        result = HotVacuum(pool, dead_rows=DEAD_ROWS).run_once()
        other.rollback()
    assert result.skipped and not result.vacuumed
    assert vacuums(conn) == 0


def test_rounds_through_pgbouncer_in_transaction_mode_vacuum_once_and_skip_a_held_table(
    db_url: str, conn: Conn, pgbouncer: PgBouncer
) -> None:
    # No session of its own to lean on: each statement may reach another server connection.
    pool = make_pool(pgbouncer.url(db_url), max_size=2, name="pg-pipeline tests")
    try:
        service = HotVacuum(pool, dead_rows=DEAD_ROWS)
        make_dead_rows(conn, 2 * DEAD_ROWS)
        with psycopg.connect(db_url) as other:
            other.execute("LOCK TABLE pipeline.active_jobs IN SHARE UPDATE EXCLUSIVE MODE")
            held = service.run_once()
            other.rollback()
        vacuumed = service.run_once()
    finally:
        pool.close()
    assert held.skipped and not held.vacuumed
    assert vacuumed.vacuumed
    assert vacuums(conn) == 1


def test_a_vacuum_that_an_old_snapshot_kept_from_its_dead_rows_is_not_run_again_every_round(
    db_url: str, conn: Conn, pool: ConnectionPool, caplog: pytest.LogCaptureFixture
) -> None:
    service = HotVacuum(pool, dead_rows=DEAD_ROWS)
    with psycopg.connect(db_url) as reader:
        reader.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        reader.execute("SELECT 1")  # its snapshot, older than the rows made dead next
        make_dead_rows(conn, 2 * DEAD_ROWS)
        with caplog.at_level(logging.INFO, logger="pg_pipeline.maintenance.hot_vacuum"):
            first = service.run_once()
            second = service.run_once()
        reader.rollback()
    assert first.vacuumed and first.left is not None and first.left >= 2 * DEAD_ROWS
    assert not second.vacuumed and second.table is not None
    assert second.table.dead > DEAD_ROWS, "the dead rows were gone: the round had no cause"
    assert vacuums(conn) == 1
    said = [r.getMessage() for r in caplog.records if "backend_xmin" in r.getMessage()]
    assert len(said) == 1, said


@pytest.fixture
def stranger(db_url: str, conn: Conn) -> Iterator[str]:
    """A role that reads and writes the jobs but does not own the table."""
    role = f"stranger_{uuid.uuid4().hex[:10]}"
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA pipeline TO {}").format(sql.Identifier(role)))
    conn.execute(
        sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON pipeline.active_jobs TO {}").format(
            sql.Identifier(role)
        )
    )
    try:
        yield role
    finally:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.fixture
def stranger_pool(db_url: str, stranger: str) -> Iterator[ConnectionPool]:
    pool = make_pool(make_conninfo(db_url, user=stranger), max_size=2, name="pg-pipeline tests")
    try:
        yield pool
    finally:
        pool.close()


def test_a_role_granted_maintain_vacuums_the_table_it_does_not_own(
    conn: Conn, stranger: str, stranger_pool: ConnectionPool
) -> None:
    if conn.info.server_version < 170000:
        pytest.skip("MAINTAIN is PostgreSQL 17's")
    conn.execute(
        sql.SQL("GRANT MAINTAIN ON pipeline.active_jobs TO {}").format(sql.Identifier(stranger))
    )
    make_dead_rows(conn, 2 * DEAD_ROWS)
    result = HotVacuum(stranger_pool, dead_rows=DEAD_ROWS).run_once()
    assert result.vacuumed
    assert vacuums(conn) == 1


def test_a_role_that_may_not_vacuum_the_table_is_told_once_and_tries_no_more(
    conn: Conn, stranger_pool: ConnectionPool, caplog: pytest.LogCaptureFixture
) -> None:
    make_dead_rows(conn, 2 * DEAD_ROWS)
    service = HotVacuum(stranger_pool, dead_rows=DEAD_ROWS)
    with caplog.at_level(logging.INFO, logger="pg_pipeline.maintenance.hot_vacuum"):
        first = service.run_once()
        # No more rounds: not even the counts are read (a closed pool would raise if they were).
        stranger_pool.close()
        second = service.run_once()
    assert not first.vacuumed and service.refused
    assert second.table is None and not second.vacuumed
    assert vacuums(conn) == 0
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "MAINTAIN" in warned[0].getMessage()


def test_a_vacuum_that_warns_of_anything_but_a_held_lock_stops_the_rounds(
    conn: Conn, stranger_pool: ConnectionPool, caplog: pytest.LogCaptureFixture
) -> None:
    # The privilege check passed (as a later version's rules might let it) and VACUUM still
    # refused: its warning is read, said once, and no round follows.
    make_dead_rows(conn, 2 * DEAD_ROWS)
    service = HotVacuum(stranger_pool, dead_rows=DEAD_ROWS, _allowed=True)
    with caplog.at_level(logging.INFO, logger="pg_pipeline.maintenance.hot_vacuum"):
        first = service.run_once()
        stranger_pool.close()
        second = service.run_once()
    assert not first.vacuumed and not first.skipped and service.refused
    assert second.table is None
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "permission denied" in warned[0].getMessage()
