"""The JobExecutor with real parts around it and a real database: a dispatched job runs on a
runner thread, its outcome is decided, and the completer settles it; a lost claim writes
nothing; a cancel frees the slot at once; a job that must run alone runs in a child process or
not at all."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Iterator
from multiprocessing import forkserver, spawn
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pipeline.outcomes import NOT_RUN_DELAY_S
from pipeline.worker.completer import Settled
from tests.integration.parts import WORKER, Conn, Parts, job_row, worker_parts
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


@contextlib.contextmanager
def fork_server_unavailable() -> Iterator[None]:
    """multiprocessing's fork server killed, and unable to start again (its interpreter is
    gone), until the block ends: what a worker meets when the server dies or cannot fork."""
    server: Any = forkserver._forkserver  # type: ignore[attr-defined]
    pid = server._forkserver_pid
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    executable = spawn.get_executable()
    multiprocessing.set_executable("/nonexistent/python3")
    try:
        yield
    finally:
        multiprocessing.set_executable(os.fsdecode(executable))


ALONE = [
    ("stubborn_child", False),  # a stage that asks to run alone
    ("effect", True),  # a crash suspect of a stage that runs in threads
]


@pytest.mark.parametrize(("stage", "suspect"), ALONE, ids=["process stage", "crash suspect"])
@pytest.mark.filterwarnings("ignore:resource_tracker")  # it died with the fork server
def test_a_job_that_must_run_alone_waits_uncharged_while_no_child_process_can_start(
    conn: Conn, parts: Parts, tmp_path: Path, stage: str, suspect: bool
) -> None:
    payload = {"seconds": 0, "mark": str(tmp_path / "pid")} if stage == "stubborn_child" else {}
    job = parts.claim(conn, stage, payload)
    if suspect:
        conn.execute("UPDATE jobs SET suspect = true WHERE id = %s", (job.id,))
        job = job._replace(suspect=True)
    with fork_server_unavailable():
        parts.executor.dispatch(job)
        wait_for(lambda: parts.heard.heard, timeout=30, what="the job to settle")
    assert parts.heard.heard == [(job.id, Settled.QUEUED)]
    status, attempts, error, wait_s = job_row(
        conn, job.id, "status, attempts, last_error, extract(epoch FROM run_after - now())"
    )
    assert (status, attempts) == ("queued", 0)
    assert error.startswith("no child process could run it: the fork server could not start")
    assert 0 < wait_s <= NOT_RUN_DELAY_S
    assert conn.execute("SELECT count(*) FROM effects").fetchone() == (0,), "it ran in a thread"

    # Once a child can start again, one runs it.
    conn.execute("UPDATE jobs SET run_after = now() WHERE id = %s", (job.id,))
    [again] = parts.store.claim([stage], 1, WORKER.id)
    parts.executor.dispatch(again)
    wait_for(lambda: len(parts.heard.heard) == 2, timeout=60, what="the job to run in a child")
    assert parts.heard.heard[1] == (job.id, Settled.DONE)
    assert job_row(conn, job.id, "status, attempts") == ("done", 1)
    [(pid,)] = conn.execute("SELECT pid FROM effects WHERE job_id = %s", (job.id,)).fetchall()
    assert pid != os.getpid()
