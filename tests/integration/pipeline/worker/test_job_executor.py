"""The JobExecutor with real parts around it and a real database: a dispatched job runs on a
runner thread, its outcome is decided, and the completer settles it; a lost claim writes
nothing; a cancel frees the slot at once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pipeline.worker.completer import Settled
from tests.integration.parts import Conn, Parts, job_row, worker_parts
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.waiting import wait_for


@pytest.fixture
def parts(db_url: str, pool: ConnectionPool, conn: Conn) -> Iterator[Parts]:
    conn.execute(EFFECTS_DDL)
    with worker_parts(db_url, pool, runner_threads=2) as p:
        yield p


def test_a_dispatched_job_is_run_decided_settled_and_lets_go_of_its_slot(
    conn: Conn, parts: Parts
) -> None:
    job = parts.claim(conn, "flaky", {"fail_times": 5, "permanent": True})
    parts.executor.dispatch(job)
    wait_for(lambda: parts.heard.heard, timeout=10, what="the job to settle")
    assert parts.heard.heard == [(job.id, Settled.FAILED)]
    status, error = job_row(conn, job.id, "status, last_error")
    assert status == "failed" and error.startswith("PermanentError: bad input on attempt 1")
    assert parts.table.free() == 2 and parts.table.get(job.id) is None


def test_a_run_that_ends_after_its_claim_was_lost_writes_nothing(conn: Conn, parts: Parts) -> None:
    job = parts.claim(conn, "waiter", {"seconds": 60})
    parts.executor.dispatch(job)
    entry = parts.table.get(job.id)
    assert entry is not None
    wait_for(lambda: entry.started, what="a runner to take the job")
    entry.ctx.lost_lease.set()  # what the heartbeat does when the row is no longer ours
    wait_for(lambda: parts.heard.heard, timeout=10, what="the job to settle")
    assert parts.heard.heard == [(job.id, Settled.LOST)]
    assert job_row(conn, job.id) == ("running", 1, None)
    assert conn.execute("SELECT count(*) FROM effects").fetchone() == (0,)


def test_a_cancel_tells_the_stage_and_frees_its_slot_without_a_write(
    conn: Conn, parts: Parts
) -> None:
    job = parts.claim(conn, "waiter", {"seconds": 60})
    parts.executor.dispatch(job)
    entry = parts.table.get(job.id)
    assert entry is not None
    wait_for(lambda: entry.started, what="a runner to take the job")
    parts.executor.cancel(job.id, job.claim + 1)  # another claim's cancel: not this one
    assert not entry.ctx.lost_lease.is_set()
    parts.executor.cancel(job.id, job.claim)
    assert entry.ctx.lost_lease.is_set()
    assert parts.table.free() == 2 and parts.table.get(job.id) is None
    wait_for(lambda: entry.thread_done, timeout=10, what="the stage to return")
    assert parts.heard.heard == [], "a cancelled job's late result was settled"
