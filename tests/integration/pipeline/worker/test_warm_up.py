"""A worker's connections run the claim and the acknowledgement once before it says it started
(pipeline/worker/worker.py, Worker._warm_up), on a job of their own that is never committed:
a fresh worker's first drain no longer pays for their first runs (benchmarks/FLEET.md)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import Worker, WorkerSettings, enqueue
from pg_pipeline.store import JobStore, warm_acknowledge, warm_claim
from tests.integration import workers
from tests.support.history import make_past_days
from tests.support.pg import prepared_plans
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=7)
FAST = WorkerSettings(concurrency=2, poll_interval_s=0.2, grace_period_s=5)
#: what a warm-up could leave behind if it wrote: the jobs (with their rows' xmax, which a
#: lock or an update of a row sets even when its transaction rolls back), the history and
#: attempts, the runs and the rollups
STATE = [
    "SELECT id, status, claims, xmin::text, xmax::text FROM pipeline.active_jobs ORDER BY id",
    "SELECT count(*) FROM pipeline.job_history",
    "SELECT count(*) FROM pipeline.job_attempts",
    "SELECT count(*) FROM pipeline.runs",
    "SELECT count(*) FROM pipeline.finished_by_minute",
    "SELECT count(*) FROM pipeline.usage_by_day",
    "SELECT count(*) FROM pipeline.freed_slots",
]


def state(conn: Conn) -> list[list[tuple[Any, ...]]]:
    return [conn.execute(q).fetchall() for q in STATE]


def test_the_warm_up_takes_its_own_job_through_both_statements_and_leaves_nothing(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    enqueue(conn, "noop", {"n": 1})
    [running] = store.claim(["noop"], 1, uuid.UUID(int=1))
    queued = enqueue(conn, "noop", {"n": 2})
    before = state(conn)
    # One job each: the claim reached its pick and update, the acknowledgement its row's path.
    assert store.warm_up_claim(WORKER) == 1
    assert store.warm_up_acknowledge(WORKER) == 1
    assert state(conn) == before
    # The real jobs are as they were: the queued one claimable, the running one acknowledgeable.
    assert store.acknowledge([running.fence], lock_wait_s=1) == {running.id}
    assert [job.id for job in store.claim(["noop"], 5, uuid.UUID(int=1))] == [queued]


def history_relations_locked(conn: Conn) -> set[str]:
    return {
        name
        for (name,) in conn.execute(
            "SELECT c.relname FROM pg_locks AS l JOIN pg_class AS c ON c.oid = l.relation"
            " WHERE l.pid = pg_backend_pid() AND c.relname LIKE 'job\\_history\\_2%%'"
        )
    }


def test_the_warm_up_locks_one_day_of_the_history_however_many_it_keeps(conn: Conn) -> None:
    # A worker's start-up must not grow with the history: the warm-up's job lands in today's
    # partition, and nothing reads or locks the others.
    make_past_days(conn, 40)
    today = conn.execute(
        "SELECT 'job_history_' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')"
    ).fetchone()
    assert today is not None
    with conn.transaction(force_rollback=True):
        assert len(warm_claim(conn, WORKER)) == 1
        assert len(warm_acknowledge(conn, WORKER)) == 1
        locked = history_relations_locked(conn)
    assert locked and all(name.startswith(today[0]) for name in locked), locked


@pytest.fixture
def counted_db(db_url: str, conn: Conn) -> Iterator[str]:
    """db_url, whose backends count their calls of functions (pg_stat_user_functions)."""
    conn.execute(
        sql.SQL("ALTER DATABASE {} SET track_functions = 'all'").format(
            sql.Identifier(conn.info.dbname)
        )
    )
    yield db_url


def calls(conn: Conn, function: str) -> int:
    row = conn.execute(
        "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions"
        " WHERE schemaname = 'pipeline' AND funcname = %s",
        (function,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_started_worker_has_run_the_claims_pick_and_the_acknowledgements_triggers(
    counted_db: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pg_pipeline.worker")
    with workers.running_worker(counted_db, ["noop"], FAST):
        wait_for(lambda: "started" in caplog.text, what="the worker to start")
        # No job was ever enqueued: an idle worker's polls reach the claim's heads alone, and
        # nothing runs the acknowledgement. Backends report their counts within a second.
        wait_for(
            lambda: calls(conn, "claim_pick") > 0 and calls(conn, "roll_up_finished") > 0,
            what="the claim's pick and the acknowledgement's rollup to have run",
        )
        assert state(conn)[1:] == [[(0,)]] * (len(STATE) - 1)
        assert conn.execute("SELECT count(*) FROM pipeline.active_jobs").fetchone() == (0,)


def test_a_worker_whose_warm_up_fails_still_starts(
    db_url: str, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(self: JobStore, worker_id: uuid.UUID) -> int:
        raise psycopg.errors.InsufficientPrivilege("permission denied for table active_jobs")

    monkeypatch.setattr(JobStore, "warm_up_claim", refused)
    monkeypatch.setattr(JobStore, "warm_up_acknowledge", refused)
    job = enqueue(conn, "noop", {"n": 1})
    with workers.running_worker(db_url, ["noop"], FAST):
        wait_for(
            lambda: (
                conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (job,)).fetchone()
                == ("done",)
            ),
            what="the job to be done",
        )


def test_the_acknowledger_runs_its_first_batches_prepared_and_planned_once_after_the_warm_up(
    db_url: str, conn: Conn, pool: ConnectionPool
) -> None:
    # Prepared at the first run, not psycopg's sixth, which a fresh worker of a fleet of
    # sixteen did not reach in a 20,000-job drain: every batch was parsed anew (0.6 ms of its
    # backend's CPU each). The warm-up's runs do not count: its rollback forgets them. And
    # planned once: planned afresh on each of its first five runs, the acknowledgement cost the
    # backend 0.3-0.5 ms a batch more; the plan it settles on is the generic one.
    worker = Worker(db_url, stages=["noop"], settings=FAST)
    try:
        acks = worker.completer.acks
        assert acks.warm_up_acknowledge(WORKER) == 1
        for n in range(3):
            enqueue(conn, "noop", {"n": n})
            [job] = JobStore(pool).claim(["noop"], 1, WORKER)
            assert acks.acknowledge([job.fence], lock_wait_s=1) == {job.id}
        with acks.pool.connection() as ack_conn:
            assert prepared_plans(ack_conn, "DELETE FROM pipeline.active_jobs") == [(3, 0)]
    finally:
        worker._close_pools()
