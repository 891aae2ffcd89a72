"""The JobExecutor with real parts around it and a real database: a dispatched job runs on a
runner thread, its outcome is decided, and the completer settles it; a lost claim writes
nothing; a cancel frees the slot at once; a job that must run alone runs in a child process or
not at all; a payload this worker's model rejects is left to a worker running another version of
the stage, for a while."""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import os
import signal
import uuid
from collections.abc import Iterator
from multiprocessing import forkserver, spawn
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import REGISTRY
from pg_pipeline.logs import JobFields, current_job
from pg_pipeline.outcomes import LEFT_DELAY_S, NOT_RUN_DELAY_S
from pg_pipeline.store import ClaimedJob
from pg_pipeline.worker.completer import Settled
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


def given_back(conn: Conn, parts: Parts, job: ClaimedJob, delay_s: float) -> str:
    """Dispatch the job, check it went back to the queue uncharged for at most delay_s, and
    return why."""
    parts.executor.dispatch(job)
    wait_for(lambda: parts.heard.heard, timeout=30, what="the job to settle")
    assert parts.heard.heard == [(job.id, Settled.QUEUED)]
    status, attempts, error, wait_s = job_row(
        conn, job.id, "status, attempts, last_error, extract(epoch FROM run_after - now())"
    )
    assert (status, attempts) == ("queued", 0)
    assert 0 < wait_s <= delay_s
    return str(error)


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
        conn.execute("UPDATE pipeline.active_jobs SET suspect = true WHERE id = %s", (job.id,))
        job = job._replace(suspect=True)
    with fork_server_unavailable():
        error = given_back(conn, parts, job, NOT_RUN_DELAY_S)
    assert error.startswith("no child process could run it: the fork server could not start")
    assert conn.execute("SELECT count(*) FROM effects").fetchone() == (0,), "it ran in a thread"

    # Once a child can start again, one runs it.
    conn.execute("UPDATE pipeline.active_jobs SET run_after = now() WHERE id = %s", (job.id,))
    [again] = parts.store.claim([stage], 1, WORKER.id)
    parts.executor.dispatch(again)
    wait_for(lambda: len(parts.heard.heard) == 2, timeout=60, what="the job to run in a child")
    assert parts.heard.heard[1] == (job.id, Settled.DONE)
    assert job_row(conn, job.id, "status, attempts") == ("done", 1)
    [(pid,)] = conn.execute("SELECT pid FROM effects WHERE job_id = %s", (job.id,)).fetchall()
    assert pid != os.getpid()


def claim_rejected(conn: Conn, parts: Parts, stage: str, payload: dict[str, Any]) -> ClaimedJob:
    """A claimed job whose payload this worker's model of `stage` rejects, as one enqueued by a
    newer version of the stage would be."""
    job = parts.claim(conn, stage, payload)
    # Values no version of these stages' models accepts, as a number of seconds or failures.
    conn.execute(
        "UPDATE pipeline.active_jobs "
        'SET payload = payload || \'{"seconds": "later", "fail_times": "x"}\' '
        "WHERE id = %s",
        (job.id,),
    )
    return job._replace(payload=job_row(conn, job.id, "payload")[0])


def another_worker(conn: Conn, stages: list[str], versions: Any, seen_s_ago: float = 0) -> None:
    """A row in pipeline_workers for a worker beside this one."""
    conn.execute(
        "INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency, stage_versions, "
        "last_seen) VALUES (%s, 'elsewhere', 1, %s, 1, %s, now() - make_interval(secs => %s))",
        (uuid.uuid4(), stages, json.dumps(versions), seen_s_ago),
    )


REJECTED = {
    "flaky": {"fail_times": 0},
    "stubborn_child": {"seconds": 0, "mark": "/nonexistent"},  # runs alone, in a child
}


@pytest.mark.parametrize("stage", REJECTED)
@pytest.mark.parametrize(
    "versions", [{"flaky": "newer", "stubborn_child": "newer"}, {}], ids=["newer", "older package"]
)
def test_a_payload_this_worker_rejects_is_left_uncharged_while_a_worker_runs_another_version(
    conn: Conn, parts: Parts, stage: str, versions: dict[str, str]
) -> None:
    another_worker(conn, [stage], versions)
    job = claim_rejected(conn, parts, stage, REJECTED[stage])
    error = given_back(conn, parts, job, LEFT_DELAY_S)
    assert error.startswith(f"left for a worker running another version of stage {stage!r}")
    assert "payload no longer valid" in error


@pytest.mark.parametrize(
    ("stages", "version", "seen_s_ago"),
    [(["flaky"], "same", 0), (["flaky"], "newer", 3600), (["noop"], "newer", 0)],
    ids=["same version", "not alive", "another stage"],
)
def test_a_payload_this_worker_rejects_fails_at_once_unless_a_worker_runs_another_version(
    conn: Conn, parts: Parts, stages: list[str], version: str, seen_s_ago: float
) -> None:
    ours = REGISTRY.get("flaky").version
    another_worker(
        conn, stages, {s: ours if version == "same" else version for s in stages}, seen_s_ago
    )
    job = claim_rejected(conn, parts, "flaky", REJECTED["flaky"])
    parts.executor.dispatch(job)
    wait_for(lambda: parts.heard.heard, timeout=10, what="the job to settle")
    assert parts.heard.heard == [(job.id, Settled.FAILED)]
    status, attempts, error = job_row(conn, job.id)
    assert (status, attempts) == ("failed", 1)
    assert error.startswith("payload no longer valid: invalid payload for stage 'flaky'")


def test_a_payload_left_for_another_version_fails_once_its_time_is_up(
    conn: Conn, parts: Parts
) -> None:
    another_worker(conn, ["flaky"], {"flaky": "newer"})
    job = claim_rejected(conn, parts, "flaky", REJECTED["flaky"])
    parts.executor.dispatch(job)
    wait_for(lambda: parts.heard.heard, timeout=10, what="the job to be left")
    assert job_row(conn, job.id, "status, attempts") == ("queued", 0)

    parts.executor.versions.leave_for_others_s = 0  # its time is up, as after 5 minutes
    conn.execute("UPDATE pipeline.active_jobs SET run_after = now() WHERE id = %s", (job.id,))
    [again] = parts.store.claim(["flaky"], 1, WORKER.id)
    parts.executor.dispatch(again)
    wait_for(lambda: len(parts.heard.heard) == 2, timeout=10, what="the job to fail")
    assert parts.heard.heard[1] == (job.id, Settled.FAILED)
    status, attempts, error = job_row(conn, job.id)
    assert (status, attempts) == ("failed", 1)
    assert error.startswith("payload no longer valid")
    assert "no worker running another version of stage 'flaky' took it within 0 s" in error


def test_a_retried_job_logs_one_warning_with_its_fields_from_within_the_jobs_context(
    conn: Conn, parts: Parts, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[JobFields | None] = []

    def note_running_job(record: logging.LogRecord) -> bool:
        seen.append(current_job())  # what a stage's own line would carry, on the same thread
        return True

    caplog.handler.addFilter(note_running_job)
    caplog.set_level(logging.DEBUG, logger="pg_pipeline.jobs")
    job = parts.claim(conn, "flaky", {"fail_times": 1, "permanent": False})
    parts.executor.dispatch(job)
    wait_for(lambda: parts.heard.heard, timeout=10, what="the job to settle")
    [line] = [r for r in caplog.records if r.name == "pg_pipeline.jobs"]
    fields = ("job_id", "stage", "tenant", "attempt", "max_attempts", "event", "cause")
    assert (line.levelname, *(getattr(line, f) for f in fields)) == (
        "WARNING",
        *(job.id, "flaky", None, 1, 4, "retried", "raised"),
    )
    assert line.reason.startswith("ConnectionError: upstream down on attempt 1")
    assert line.next_run_at is not None
    assert seen == [JobFields(job.id, "flaky", None, 1)]


def test_a_refused_completion_logs_one_error_that_says_the_database_refused_it(
    conn: Conn, parts: Parts, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pg_pipeline")
    job = parts.claim(conn, "hostile", {"mode": "step_raises"})
    parts.executor.dispatch(job)
    wait_for(lambda: parts.heard.heard, timeout=10, what="the job to settle")
    [line] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert (line.name, line.levelname, line.event, line.cause) == (
        "pg_pipeline.jobs",
        "ERROR",
        "failed",
        "refused",
    )
    assert line.reason.startswith("a completion step failed: KeyError")
