"""The history's days made ahead: every worker runs the Partitions service, so two at once
must each find what the other made."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pg_pipeline.history import HISTORY_DAYS_AHEAD
from pg_pipeline.maintenance import Partitions

Conn = psycopg.Connection[Any]

DAYS = (
    "SELECT count(*) FROM pg_inherits WHERE inhparent = 'pipeline.job_history'::regclass "
    "AND inhrelid::regclass::text >= 'pipeline.job_history_' "
    "|| to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')"
)


def days_ahead(conn: Conn) -> int:
    row = conn.execute(DAYS).fetchone()
    assert row is not None
    return int(row[0])


def test_two_services_at_once_make_each_missing_day_once(conn: Conn, pool: ConnectionPool) -> None:
    parts = conn.execute(
        "SELECT inhrelid::regclass::text FROM pg_inherits "
        "WHERE inhparent = 'pipeline.job_history'::regclass"
    ).fetchall()
    for (part,) in parts:
        conn.execute(f"DROP TABLE {part}")  # type: ignore[call-overload]
    made: list[int] = []
    start = threading.Barrier(2)

    def one() -> None:
        start.wait()
        made.append(Partitions(pool).run_once())

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)

    assert sorted(made) == [0, HISTORY_DAYS_AHEAD + 1]
    assert days_ahead(conn) == HISTORY_DAYS_AHEAD + 1
    assert Partitions(pool).run_once() == 0, "a round over days that exist makes nothing"
