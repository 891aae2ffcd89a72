"""The acknowledger's own connection (pipeline/worker/worker.py): on a direct connection its
session holds each batch's lock wait and planning (store.hold_ack_settings), and a batch's
first write is one statement in one round trip; behind a transaction pooler its session holds
nothing, and each batch is a transaction that sets them for itself (benchmarks/FLEET.md)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import Worker, WorkerSettings, enqueue
from pg_pipeline import store as store_module
from pg_pipeline.db import POOLER_ENV, make_pool
from pg_pipeline.store import ClaimedJob, JobStore, hold_ack_settings
from pg_pipeline.worker.completer import ACK_LOCK_WAIT_S
from tests.support.pg import protocol_trace, round_trips
from tests.support.pgbouncer import PgBouncer
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=1)
FAST = WorkerSettings(concurrency=2, poll_interval_s=0.2, grace_period_s=5)


@contextmanager
def acknowledger(url: str) -> Iterator[JobStore]:
    """Where a worker's acknowledger writes its batches, on the connection the worker makes."""
    worker = Worker(url, stages=["noop"], settings=FAST)
    try:
        yield worker.completer.acks
    finally:
        worker._close_pools()


def its_connection(store: JobStore) -> Conn:
    """The one connection of a store's pool of one (handed back: its store takes it again)."""
    with store.pool.connection() as conn:
        return conn


def claimed(conn: Conn, pool: ConnectionPool, n: int) -> list[ClaimedJob]:
    for i in range(n):
        enqueue(conn, "noop", {"n": i})
    return JobStore(pool).claim(["noop"], n, WORKER)


def settings(conn: Conn) -> tuple[str, str]:
    row = conn.execute(
        "SELECT current_setting('lock_timeout'), current_setting('plan_cache_mode')",
        prepare=False,
    ).fetchone()
    assert row is not None
    return (str(row[0]), str(row[1]))


def statuses(conn: Conn, ids: list[int]) -> list[str]:
    return [
        row[0]
        for row in conn.execute(
            "SELECT status FROM pipeline.jobs WHERE id = ANY(%s) ORDER BY id", (ids,)
        )
    ]


def test_on_a_direct_connection_a_batch_is_one_statement_in_one_round_trip(
    db_url: str, conn: Conn, pool: ConnectionPool
) -> None:
    first, *jobs = claimed(conn, pool, 4)
    with acknowledger(db_url) as acks:
        ack_conn = its_connection(acks)
        assert settings(ack_conn) == ("50ms", "force_generic_plan")
        # The connection's first batch prepares the statement, a round trip of its own.
        assert acks.acknowledge([first.fence], lock_wait_s=ACK_LOCK_WAIT_S) == {first.id}
        with protocol_trace(ack_conn) as trace:
            confirmed = acks.acknowledge([j.fence for j in jobs], lock_wait_s=ACK_LOCK_WAIT_S)
    assert confirmed == {j.id for j in jobs}
    assert statuses(conn, sorted(confirmed)) == ["done"] * 3
    sent = [line.split("\t")[2] for line in trace if line.startswith("F\t")]
    # The statement alone, outside a transaction: no BEGIN, settings or COMMIT around it.
    assert (round_trips(trace), sent.count("Execute"), sent.count("Query")) == (1, 1, 0), trace


def test_a_batch_still_waits_its_rows_wait_for_a_locked_row_and_then_skips_it(
    db_url: str, conn: Conn, pool: ConnectionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Longer than the 50 ms, so that the wait can be told from no wait at all; the session
    # takes it when the connection is made.
    monkeypatch.setattr(store_module, "ACK_ROW_WAIT_S", 0.3)
    jobs = claimed(conn, pool, 3)
    operator = psycopg.connect(db_url)
    try:
        operator.execute("SELECT FROM pipeline.active_jobs WHERE id = %s FOR UPDATE", (jobs[1].id,))
        with acknowledger(db_url) as acks:
            assert settings(its_connection(acks))[0] == "300ms"
            done: list[tuple[set[int], float]] = []

            def acknowledge() -> None:
                started = time.monotonic()
                # The caller's wait, for locks no statement can skip, far longer than the row's.
                confirmed = acks.acknowledge([j.fence for j in jobs], lock_wait_s=5.0)
                done.append((confirmed, time.monotonic() - started))

            acker = threading.Thread(target=acknowledge, daemon=True)
            acker.start()
            # The lock is held throughout: a batch that waited for it would never come back.
            wait_for(lambda: done, timeout=10, what="the batch, while the row is still locked")
            assert acks.still_held([jobs[1].fence]) == {jobs[1].id}
    finally:
        operator.close()
    [(confirmed, waited_s)] = done
    assert confirmed == {jobs[0].id, jobs[2].id}
    assert 0.3 <= waited_s < 2.5
    assert statuses(conn, [j.id for j in jobs]) == ["done", "running", "done"]


def history_waiters_past(conn: Conn, seconds: float) -> int:
    """Backends that have waited longer than `seconds` for a lock on the history's table."""
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE NOT granted"
        " AND relation = 'pipeline.job_history'::regclass"
        " AND clock_timestamp() - waitstart > make_interval(secs => %s)",
        (seconds,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_batch_makes_a_missing_day_of_the_history_however_long_a_reader_holds_it_up(
    db_url: str, conn: Conn, pool: ConnectionPool
) -> None:
    # The day's partition is made under a lock on the history that waits for its readers:
    # not bounded by the session's 50 ms (history.healing lifts it), or the batch would fail.
    today = conn.execute(
        "SELECT 'pipeline.job_history_' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')"
    ).fetchone()
    assert today is not None
    conn.execute(f"DROP TABLE {today[0]}")  # type: ignore[call-overload]
    jobs = claimed(conn, pool, 2)
    reader = psycopg.connect(db_url)
    try:
        reader.execute("SELECT count(*) FROM pipeline.job_history")
        with acknowledger(db_url) as acks:
            done: list[set[int] | BaseException] = []

            def acknowledge() -> None:
                try:
                    done.append(acks.acknowledge([j.fence for j in jobs], lock_wait_s=1.0))
                except BaseException as exc:
                    done.append(exc)

            acker = threading.Thread(target=acknowledge, daemon=True)
            acker.start()
            past = 10 * store_module.ACK_ROW_WAIT_S
            wait_for(
                lambda: done or history_waiters_past(conn, past),
                timeout=10,
                what=f"the day's making to wait for the reader longer than {past} s",
            )
            assert not done, done
            reader.commit()
            acker.join(timeout=10)
    finally:
        reader.close()
    assert done == [{j.id for j in jobs}]
    rows = conn.execute("SELECT DISTINCT tableoid::regclass::text FROM pipeline.job_history")
    assert rows.fetchall() == [(today[0],)]


@pytest.mark.parametrize("pooler", ["pgbouncer", "setting"])
def test_behind_a_transaction_pooler_the_session_holds_nothing_and_a_batch_sets_it_all_itself(
    db_url: str,
    conn: Conn,
    pool: ConnectionPool,
    pooler: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Through PgBouncer in transaction mode (detected), the session's settings would reach
    # whichever client the server connection serves next; told by the setting on a direct
    # connection, the pool may be a pooler all the same.
    if pooler == "pgbouncer":
        bouncer: PgBouncer = request.getfixturevalue("pgbouncer")
        url = bouncer.url(db_url)
    else:
        url = db_url
        monkeypatch.setenv(POOLER_ENV, "transaction")
    jobs = claimed(conn, pool, 2)
    # A pool of one, alone behind the pooler for this database: each statement reaches the one
    # server connection the pooler made for it, whose session the worker's would have set.
    acks = JobStore(
        make_pool(url, max_size=1, name="pg-pipeline tests", direct_session=hold_ack_settings)
    )
    try:
        ack_conn = its_connection(acks)
        assert settings(ack_conn) == ("0", "auto")
        with protocol_trace(ack_conn) as trace:
            confirmed = acks.acknowledge([j.fence for j in jobs], lock_wait_s=ACK_LOCK_WAIT_S)
        assert settings(ack_conn) == ("0", "auto")
    finally:
        acks.pool.close()
    assert confirmed == {j.id for j in jobs}
    queries = [line.split("\t")[3].strip() for line in trace if "\tQuery\t" in line]
    assert queries == ['"BEGIN"', '"COMMIT"'], trace
