"""Notifications are hints, never orders: NOTIFY takes no privilege, so any role that can log in
may send `pipeline_cancel` or `pipeline_jobs` with whatever payload it likes.

Each test sends them as a LOGIN role with no privilege on any table, at a real Worker running in
a thread: a forged cancel stops nothing, and a flood of either kind costs a bounded number of
statements.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import WorkerSettings, enqueue
from pg_pipeline.admin.jobs import cancel_job
from pg_pipeline.listener import CANCEL_CHECK_INTERVAL_S
from pg_pipeline.worker.producer import FIRST_DEAF_S
from tests.integration.workers import running_worker
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(EFFECTS_DDL)
        yield c


@pytest.fixture
def stranger(db_url: str, conn: Conn) -> Iterator[Conn]:
    """A session of a role that may log in and do nothing else: no privilege on any table."""
    role = f"stranger_{uuid.uuid4().hex[:10]}"
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    try:
        with psycopg.connect(make_conninfo(db_url, user=role), autocommit=True) as session:
            jobs = conn.execute("SELECT 'pipeline.jobs'::regclass::oid").fetchone()
            allowed = session.execute(
                "SELECT has_schema_privilege('pipeline', 'USAGE'),"
                " has_table_privilege(%(jobs)s::oid, 'SELECT'),"
                " has_table_privilege(%(jobs)s::oid, 'UPDATE')",
                {"jobs": jobs[0] if jobs else None},
            ).fetchone()
            assert allowed == (False, False, False)
            yield session
    finally:
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def notify(session: Conn, channel: str, payload: str) -> None:
    session.execute("SELECT pg_notify(%s, %s)", (channel, payload))


def flood(session: Conn, channel: str, payloads: Callable[[int], str], seconds: float) -> int:
    """One notification per statement (a transaction would fold identical ones into one) for
    `seconds`; returns how many were sent."""
    sent = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        notify(session, channel, payloads(sent))
        sent += 1
    return sent


def row(conn: Conn, job_id: int, columns: str = "status, attempts, claims") -> tuple[Any, ...]:
    found = conn.execute(f"SELECT {columns} FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone()
    assert found is not None
    return tuple(found)


def effects(conn: Conn) -> list[tuple[Any, ...]]:
    return conn.execute("SELECT job_id, attempt, note FROM effects ORDER BY at").fetchall()


class Counted:
    """Counts the calls of a bound method it stands in for, and passes each one on."""

    def __init__(self, method: Callable[..., Any]) -> None:
        self.method = method
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.method(*args, **kwargs)


SETTINGS = WorkerSettings(concurrency=2, poll_interval_s=0.5, grace_period_s=5)


def test_a_forged_cancel_stops_nothing_and_a_real_one_still_stops_its_job(
    db_url: str, conn: Conn, stranger: Conn
) -> None:
    # "nap" sleeps through a cancel: abandoned, its result would be dropped and the job left
    # running until its lease ran out. "waiter" returns as soon as it is told.
    napping = enqueue(conn, "nap", {"seconds": 4, "mark": "napped"})
    waiting = enqueue(conn, "waiter", {"seconds": 60})
    with running_worker(db_url, ["nap", "waiter"], SETTINGS) as worker:
        wait_for(
            lambda: all(worker.table.get(j) for j in (napping, waiting)), what="both jobs to run"
        )
        entry = worker.table.get(napping)
        assert entry is not None
        notify(stranger, "pipeline_cancel", f"{napping}:{entry.job.claim}")
        # Sent after the forged one, so heard after it: once it has been acted on, the forged
        # one has been dealt with too.
        assert cancel_job(conn, waiting).name == "DONE"
        wait_for(lambda: worker.table.get(waiting) is None, what="the real cancel to stop its job")
        assert not entry.ctx.lost_lease.is_set(), "a forged cancel stopped a running job"
        assert worker.cancels.forged == 1
        wait_for(lambda: row(conn, napping)[0] == "done", what="the napping job to finish")
    assert row(conn, napping) == ("done", 1, 1)
    assert effects(conn) == [(napping, 1, "napped")]
    assert row(conn, waiting, "status") == ("cancelled",)


def test_a_flood_of_forged_cancels_for_a_running_job_costs_a_read_per_check_interval(
    db_url: str, conn: Conn, stranger: Conn
) -> None:
    job_id = enqueue(conn, "waiter", {"seconds": 60})
    with running_worker(db_url, ["waiter"], SETTINGS) as worker:
        wait_for(lambda: worker.table.get(job_id), what="the job to run")
        entry = worker.table.get(job_id)
        assert entry is not None
        reads = Counted(worker.cancels.store.cancelled)
        worker.cancels.store.cancelled = reads  # type: ignore[method-assign]
        started = time.monotonic()
        # The job's own claim, and claims and ids around it: all forged.
        claim = entry.job.claim
        sent = flood(
            stranger,
            "pipeline_cancel",
            lambda i: f"{job_id + i % 3}:{claim + i % 2}",
            seconds=2.0,
        )
        elapsed = time.monotonic() - started
        assert sent > 100, "the flood was too thin to show anything"
        wait_for(lambda: reads.calls > 0, what="the forged cancels to be checked")
        assert not entry.ctx.lost_lease.is_set()
        assert reads.calls <= elapsed / CANCEL_CHECK_INTERVAL_S + 2, (reads.calls, sent)
        assert row(conn, job_id) == ("running", 1, 1)
        assert cancel_job(conn, job_id).name == "DONE"
        wait_for(lambda: worker.table.get(job_id) is None, what="the real cancel to be heard")


def test_a_flood_of_job_announcements_costs_at_most_one_claim_per_poll_interval(
    db_url: str, conn: Conn, stranger: Conn
) -> None:
    # Once the deaf window has doubled up to the poll interval: a few claims more at the start.
    with running_worker(db_url, ["noop"], SETTINGS) as worker:
        claims = Counted(worker.producer.store.claim)
        worker.producer.store.claim = claims  # type: ignore[method-assign]
        started = time.monotonic()
        sent = flood(stranger, "pipeline_jobs", lambda i: "noop", seconds=3.0)
        elapsed = time.monotonic() - started
        made = claims.calls
        assert sent > 100, "the flood was too thin to show anything"
        polls = elapsed / SETTINGS.poll_interval_s
        # The window's doublings from FIRST_DEAF_S to the poll interval, each a woken claim.
        ramp = math.ceil(math.log2(SETTINGS.poll_interval_s / FIRST_DEAF_S)) + 1
        # The polls, one claim an announcement woke per poll interval, the ramp, one either side.
        bound = 2 * polls + ramp + 2
        assert made <= bound, f"{made} claims for {sent} announcements in {elapsed:.1f} s"
        # Real jobs still run: the polls, and announcements once a claim finds work, see to it.
        job_id = enqueue(conn, "noop", {})
        wait_for(lambda: row(conn, job_id)[0] == "done", what="a real job to run")
