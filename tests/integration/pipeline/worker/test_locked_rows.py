"""A job row locked by another transaction (an operator's open transaction) for longer than a
lease stalls nothing: the worker's other jobs are heartbeated and acknowledged meanwhile, the
locked one is settled the moment the lock goes, and no job runs twice.

A real Worker runs in a thread against the test's own database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import JobRequest, WorkerSettings, enqueue, enqueue_many
from tests.integration import workers
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
#: reclaim looks for expired leases several times a second: a stalled heartbeat shows at once
SETTINGS = WorkerSettings(concurrency=4, poll_interval_s=0.1, reclaim_interval_s=0.3)


@pytest.fixture
def operator(db_url: str) -> Iterator[Conn]:
    """A session that holds its locks until the test rolls it back."""
    with psycopg.connect(db_url) as c:
        yield c
        c.rollback()


def status(conn: Conn, job_id: int) -> str:
    row = conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None
    return str(row[0])


def done(conn: Conn, ids: list[int]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pipeline.jobs WHERE id = ANY(%s) AND status = 'done'", (ids,)
    ).fetchone()
    return int(row[0]) if row else 0


def lease_ran_out_twice(conn: Conn, job_id: int) -> bool:
    row = conn.execute(
        "SELECT leased_until < now() - make_interval(secs => lease_seconds) FROM pipeline.jobs "
        "WHERE id = %s",
        (job_id,),
    ).fetchone()
    return bool(row and row[0])


def test_a_job_row_locked_for_two_leases_stalls_no_acknowledgement_and_no_job_runs_twice(
    db_url: str, conn: Conn, operator: Conn
) -> None:
    held = enqueue(conn, "brief", {"seconds": 0.3})
    with workers.running_worker(db_url, ["brief"], SETTINGS) as worker:
        wait_for(lambda: status(conn, held) == "running", what="the job to start")
        operator.execute("SELECT 1 FROM pipeline.active_jobs WHERE id = %s FOR UPDATE", (held,))
        # Its run ends now and its completion waits for the lock; the jobs after it must not.
        others = enqueue_many(conn, [JobRequest("brief", {"seconds": 0.05}) for _ in range(40)])
        wait_for(
            lambda: done(conn, others) == len(others),
            timeout=20,
            what="the other jobs to be acknowledged while the row is locked",
        )
        wait_for(
            lambda: lease_ran_out_twice(conn, held),
            timeout=20,
            what="the locked job's lease to run out twice over",
        )
        # Still, while the lock lasts, jobs that outlast their lease are heartbeated and done.
        later = enqueue_many(conn, [JobRequest("brief", {"seconds": 2.5}) for _ in range(4)])
        wait_for(lambda: done(conn, later) == len(later), timeout=20, what="the later jobs")
        assert status(conn, held) == "running"
        operator.rollback()
        wait_for(lambda: status(conn, held) == "done", timeout=10, what="the locked job done")
        assert worker.fatal is None
    rows = conn.execute(
        "SELECT count(*), max(claims), bool_or(suspect) FROM pipeline.jobs WHERE id = ANY(%s)",
        ([held, *others, *later],),
    ).fetchone()
    assert rows == (45, 1, False), "a job was reclaimed and run again"
