"""A worker's Maintainer against real Postgres: a long retention pass holds no other service
back (issue 20, defect 10), the hot table's vacuum among them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from itertools import pairwise
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline.maintenance import Maintainer
from pg_pipeline.queries import Q
from pg_pipeline.schedules import Schedule, save_schedule
from pg_pipeline.settings import WorkerSettings
from tests.support.history import make_past_days
from tests.support.waiting import lock_waiters, wait_for

Conn = psycopg.Connection[Any]


@pytest.fixture(autouse=True)
def history_days(db_url: str) -> None:
    """The history's days that this module's finished jobs are dated in."""
    with psycopg.connect(db_url, autocommit=True) as c:
        make_past_days(c, 31)


WEEK = 7 * 86_400.0
BACKLOG = 5_000  #: old finished jobs the pass deletes, after the stall
TICK_S = 0.5  #: the scheduler's and reclaim's period in this test
#: The longest the schedule may go without a fire: its period, one tick, the jitter of both
#: and room for a loaded machine; a pass that held the ticks back lasts far longer (the stall
#: alone outlasts it).
MAX_GAP_S = 1.0 + TICK_S + 1.5


def fire_times(conn: Conn) -> list[datetime]:
    """When each of the schedule's jobs was enqueued, by the database's clock."""
    return [
        at
        for (at,) in conn.execute(
            "SELECT created_at FROM pipeline.jobs WHERE dedup_key IS NOT NULL ORDER BY created_at"
        ).fetchall()
    ]


def count(conn: Conn, sql: str) -> int:
    row = conn.execute(sql).fetchone()
    assert row is not None
    return int(row[0])


def wait_for_its_turn(conn: Conn) -> None:
    """Until the retention pass waits for another pass's prune_lock."""
    wait_for(lambda: lock_waiters(conn), what="the retention pass to wait for its turn")


@contextmanager
def waiting_retention(
    db_url: str, conn: Conn, pool: ConnectionPool, settings: WorkerSettings
) -> Iterator[tuple[Conn, threading.Event]]:
    """A worker's maintainer at work, its retention pass waiting for its turn: another worker's
    prune batch holds it (prune_lock, on the connection given, until the test rolls it back),
    so the retention round lasts until the test has seen the other services at work. Given
    with the maintainer's halt; stopped at the end."""
    halt = threading.Event()
    maintainer = Maintainer.for_worker(pool, settings, halt=halt)
    thread = threading.Thread(target=maintainer.run, daemon=True)
    with psycopg.connect(db_url) as other_pass:
        other_pass.execute(Q["prune_lock"])
        thread.start()
        try:
            wait_for_its_turn(conn)
            yield other_pass, halt
        finally:
            other_pass.rollback()
            halt.set()
            thread.join(timeout=10)
    assert not thread.is_alive(), "the maintainer did not stop"


def test_a_long_retention_pass_delays_neither_a_one_second_schedule_nor_reclaim(
    db_url: str, conn: Conn, pool: ConnectionPool
) -> None:
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, attempts, finished_at) "
        "SELECT 'noop', 'done', 1, now() - interval '30 days' FROM generate_series(1, %s)",
        (BACKLOG,),
    )
    save_schedule(conn, Schedule.define("every-second", stage="noop", every=1))
    settings = WorkerSettings(
        retention_s=WEEK, schedule_interval_s=TICK_S, reclaim_interval_s=TICK_S
    )
    with waiting_retention(db_url, conn, pool, settings) as (other_pass, _):
        fired_before = len(fire_times(conn))
        wait_for(
            lambda: len(fire_times(conn)) >= fired_before + 3,
            timeout=15,
            what="the schedule to fire three times while the retention pass waits",
        )
        # A worker died holding a job: its lease expires while the pass still waits.
        conn.execute(
            "INSERT INTO pipeline.active_jobs (type, status, attempts, leased_until, "
            "started_at) "
            "VALUES ('noop', 'running', 1, now() - interval '1 second', now())"
        )
        wait_for(
            lambda: count(conn, "SELECT count(*) FROM pipeline.jobs WHERE suspect") == 1,
            timeout=15,
            what="the expired lease to be reclaimed while the retention pass waits",
        )
        other_pass.rollback()
        wait_for(
            lambda: (
                count(conn, "SELECT count(*) FROM pipeline.jobs WHERE finished_at IS NOT NULL") == 0
            ),
            timeout=120,
            what="the pass to delete the backlog",
        )
        # One more fire after the pass: a gap spanning its end counts too.
        fired_after = len(fire_times(conn))
        wait_for(
            lambda: len(fire_times(conn)) > fired_after,
            timeout=15,
            what="the schedule to fire after the pass",
        )

    fired = fire_times(conn)
    gaps = [(b - a).total_seconds() for a, b in pairwise(fired)]
    assert max(gaps) < MAX_GAP_S, gaps


def test_a_stopping_maintainer_ends_a_retention_pass_between_batches(
    db_url: str, conn: Conn, pool: ConnectionPool
) -> None:
    # In the day of the cutoff, before it: pruned run by run, in batches (an older day would
    # be dropped at once).
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, attempts, finished_at) "
        "SELECT 'noop', 'done', 1, now() - interval '7 days' "
        "- (now() - (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')) / 2 "
        "FROM generate_series(1, %s)",
        (BACKLOG,),
    )
    # The stop comes while the pass waits for its turn (another pass's prune_lock): a batch
    # of a thousand runs takes milliseconds, so a stop timed by watching the rows go could
    # come after the last one.
    with waiting_retention(db_url, conn, pool, WorkerSettings(retention_s=WEEK)) as (_, halt):
        halt.set()
    assert count(conn, "SELECT count(*) FROM pipeline.jobs") > 0, "the pass went on to the end"


def vacuums(conn: Conn) -> int:
    """Manual vacuums of the hot table so far (autovacuum's are counted apart)."""
    return count(conn, "SELECT pg_stat_get_vacuum_count('pipeline.active_jobs'::regclass)")


def test_a_long_retention_pass_does_not_hold_the_hot_tables_vacuum_back(
    db_url: str, conn: Conn, pool: ConnectionPool
) -> None:
    conn.execute("ALTER TABLE pipeline.active_jobs SET (autovacuum_enabled = false)")
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, attempts, finished_at) "
        "SELECT 'noop', 'done', 1, now() - interval '30 days' FROM generate_series(1, 100)"
    )
    settings = WorkerSettings(retention_s=WEEK, hot_vacuum_dead_rows=1_000)
    with waiting_retention(db_url, conn, pool, settings):
        # A drain's worth of dead rows while the retention pass waits for its turn.
        conn.execute(
            "INSERT INTO pipeline.active_jobs (type) SELECT 'noop' FROM generate_series(1, 2000)"
        )
        conn.execute("DELETE FROM pipeline.active_jobs")
        conn.execute("SELECT pg_stat_force_next_flush()")
        wait_for(
            lambda: vacuums(conn) >= 1,
            timeout=15,
            what="the hot table to be vacuumed while the retention pass waits",
        )
        assert lock_waiters(conn) >= 1, "the retention pass stopped waiting"
