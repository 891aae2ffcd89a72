"""A database that stops taking writes for a while does not stop a worker, nor make it let go
of its jobs: it waits, like an outage, and finishes them once the database takes writes again.

A real Worker runs in a thread against the test's own database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import WorkerSettings, enqueue
from tests.integration import workers
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
FAST = WorkerSettings(
    concurrency=2, poll_interval_s=0.1, reclaim_interval_s=0.5, grace_period_s=2, db_retry_max_s=0.3
)
#: worker stages: nap's half-second heartbeat sets the worker's beat, so it beats while it waits
STAGES = ["waiter", "effect", "nap"]
READ_ONLY_ERROR = "read-only transaction"


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(EFFECTS_DDL)
        yield c


def row(conn: Conn, job_id: int, columns: str = "status") -> tuple[Any, ...]:
    found = conn.execute(f"SELECT {columns} FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone()
    assert found is not None
    return tuple(found)


def effects(conn: Conn, job_id: int) -> int:
    found = conn.execute("SELECT count(*) FROM effects WHERE job_id = %s", (job_id,)).fetchone()
    return int(found[0]) if found else 0


def cut_sessions_but_mine(conn: Conn) -> None:
    """End every other session on this database: the worker's next ones start afresh."""
    conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )


def failures(caplog: pytest.LogCaptureFixture, what: str) -> int:
    return sum(what in r.getMessage() and READ_ONLY_ERROR in r.getMessage() for r in caplog.records)


def test_a_read_only_database_is_waited_out_and_the_running_job_is_kept(
    db_url: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    """As after a failover onto a standby, or with default_transaction_read_only = on: every
    write the worker makes fails with 25006 until the database takes writes again."""
    dbname = conn.info.dbname
    held = enqueue(conn, "waiter", {"seconds": 0.5, "mark": "held"})
    with workers.running_worker(db_url, STAGES, FAST) as worker:
        wait_for(lambda: row(conn, held) == ("running",), what="the job to start")
        conn.execute(f'ALTER DATABASE "{dbname}" SET default_transaction_read_only = on')
        try:
            cut_sessions_but_mine(conn)  # this session, made before, can still write
            wait_for(
                lambda: (
                    failures(caplog, "heartbeat failed") >= 3
                    and failures(caplog, f"complete job {held}") >= 1
                ),
                what="the heartbeat and the job's completion to meet the read-only database",
            )
            later = enqueue(conn, "effect", {"n": 1})
            wait_for(lambda: failures(caplog, "claim failed") >= 2, what="claims to be refused too")
            assert worker.fatal is None and not worker.stopping, worker.fatal
            assert row(conn, held) == ("running",) and row(conn, later) == ("queued",)
        finally:
            conn.execute(f'ALTER DATABASE "{dbname}" RESET default_transaction_read_only')
        wait_for(lambda: row(conn, held) == ("done",), what="the held job to be done")
        wait_for(lambda: row(conn, later) == ("done",), what="the later job to be done")
    # Kept through it all: never released, reclaimed or run twice.
    assert row(conn, held, "attempts, claims, suspect") == (1, 1, False)
    assert effects(conn, held) == 1 and effects(conn, later) == 1
