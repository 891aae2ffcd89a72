"""Jobs claimed ahead of a free runner: held, run in order, and given back untouched."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import WorkerSettings, enqueue
from pg_pipeline.queries import Q
from tests.integration.workers import running_worker
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
ONE_RUNNER = WorkerSettings(
    concurrency=1, prefetch=3, poll_interval_s=0.2, reclaim_interval_s=0.5, grace_period_s=0.5
)


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(EFFECTS_DDL)
        yield c


def rows(conn: Conn) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT id, status, attempts, releases, last_error FROM pipeline.jobs ORDER BY id"
    ).fetchall()


def running(conn: Conn) -> int:
    row = conn.execute("SELECT count(*) FROM pipeline.jobs WHERE status = 'running'").fetchone()
    return int(row[0]) if row else 0


def effects(conn: Conn) -> list[str]:
    return [r[0] for r in conn.execute("SELECT note FROM effects ORDER BY job_id")]


def test_jobs_claimed_ahead_go_back_uncharged_and_unreleased_at_shutdown(
    db_url: str, conn: Conn
) -> None:
    ids = [enqueue(conn, "waiter", {"seconds": 60, "mark": str(i)}) for i in range(4)]
    with running_worker(db_url, ["waiter"], ONE_RUNNER):
        wait_for(lambda: running(conn) == 4, what="one job running and three claimed ahead")
    first, *ahead = rows(conn)
    # The one that ran outlasted the grace period: a release, refunded.
    assert first == (ids[0], "queued", 0, 1, "released at worker shutdown")
    # The ones that only waited are as if never claimed: no attempt, no release, no error.
    assert ahead == [(i, "queued", 0, 0, None) for i in ids[1:]]
    assert effects(conn) == []


def test_a_job_cancelled_while_claimed_ahead_never_runs(db_url: str, conn: Conn) -> None:
    settings = ONE_RUNNER.model_copy(update={"prefetch": 1})
    blocker = enqueue(conn, "waiter", {"seconds": 60, "mark": "blocker"})
    parked = enqueue(conn, "waiter", {"seconds": 0, "mark": "parked"})
    with running_worker(db_url, ["waiter"], settings):
        wait_for(lambda: running(conn) == 2, what="one job running and one claimed ahead")
        assert conn.execute(Q["cancel"], {"id": parked, "reason": "not wanted"}).fetchall()
        assert conn.execute(Q["cancel"], {"id": blocker, "reason": "done waiting"}).fetchall()
        after = enqueue(conn, "waiter", {"seconds": 0, "mark": "after"})
        wait_for(
            lambda: (
                conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (after,)).fetchone()
                == ("done",)
            ),
            what="the job enqueued after the cancels",
        )
    assert effects(conn) == ["after"]
    statuses = dict(conn.execute("SELECT id, status FROM pipeline.jobs").fetchall())
    assert statuses[parked] == "cancelled" and statuses[blocker] == "cancelled"


def test_the_timeout_of_a_job_claimed_ahead_counts_from_its_start(db_url: str, conn: Conn) -> None:
    settings = ONE_RUNNER.model_copy(update={"prefetch": 1})
    # slowpoke's timeout is 0.3 s; it waits here twice that for the only runner, then runs
    # for a third of it.
    enqueue(conn, "waiter", {"seconds": 0.6, "mark": "first"})
    quick = enqueue(conn, "slowpoke", {"seconds": 0.1})
    with running_worker(db_url, ["waiter", "slowpoke"], settings):
        wait_for(
            lambda: (
                conn.execute(
                    "SELECT status, attempts FROM pipeline.jobs WHERE id = %s", (quick,)
                ).fetchone()
                == ("done", 1)
            ),
            what="the parked job to run to the end within its timeout",
        )
