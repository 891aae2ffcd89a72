"""Nothing a job returns or raises, no payload and no notification stops a worker.

Each test runs a real Worker in a thread against its own database and checks that the hostile
job ends with its reason, that the worker keeps working (the next job is done) and that it
stops cleanly (exit code 0).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import Worker, WorkerSettings, enqueue
from tests.integration import workers
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
FAST = WorkerSettings(concurrency=2, poll_interval_s=0.1, reclaim_interval_s=0.5, grace_period_s=2)


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(EFFECTS_DDL)
        yield c


def running_worker(
    db_url: str, stages: list[str], settings: WorkerSettings = FAST, *, expect_exit: int = 0
) -> contextlib.AbstractContextManager[Worker]:
    return workers.running_worker(db_url, stages, settings, expect_exit=expect_exit)


def job(conn: Conn, job_id: int) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT status, attempts, last_error FROM pipeline.jobs WHERE id = %s", (job_id,)
    ).fetchone()
    assert row is not None
    return tuple(row)


def status(conn: Conn, job_id: int) -> str:
    return str(job(conn, job_id)[0])


REFUSALS = [
    ("nul_output", "output cannot be stored: NUL character in field 'text'"),
    ("nan_output", "output cannot be stored: NaN in field 'score'"),
    ("nul_error", "PermanentError: broken\\x00message"),
    ("big_priority", "priority"),
    ("fan_twice", "fan_out may be called once per job"),
    ("step_raises", "a completion step failed: KeyError"),
    ("step_refused", "the database refused the job's completion: NumericValueOutOfRange"),
    # Class 54, which psycopg raises as an OperationalError, like an outage: a refusal all the
    # same, which no number of retries cures.
    ("index_row_too_big", "the database refused the job's completion: ProgramLimitExceeded"),
    ("stack_too_deep", "the database refused the job's completion: StatementTooComplex"),
    ("exit", "SystemExit: 3"),
]


@pytest.mark.parametrize(("mode", "reason"), REFUSALS, ids=[m for m, _ in REFUSALS])
def test_a_write_the_database_refuses_fails_that_job_and_the_worker_goes_on(
    db_url: str, conn: Conn, mode: str, reason: str
) -> None:
    bad = enqueue(conn, "hostile", {"mode": mode})
    with running_worker(db_url, ["hostile", "effect"]):
        wait_for(lambda: status(conn, bad) == "failed", what=f"the {mode} job to fail")
        good = enqueue(conn, "effect", {"n": 1})
        wait_for(lambda: status(conn, good) == "done", what="the next job to be done")
    state, attempts, error = job(conn, bad)
    assert reason in error
    assert state == "failed" and attempts in (1, 3)
    # The refused job wrote none of its effects; the next one did.
    notes = [r[0] for r in conn.execute("SELECT note FROM effects").fetchall()]
    assert notes == ["n=1"]


@pytest.mark.parametrize(
    ("channel", "payload"),
    [
        ("pipeline_cancel", "oops"),
        ("pipeline_cancel", "1:2:3"),
        ("pipeline_cancel", "99999999999999999999999:1"),
        ("pipeline_cancel", "x" * 7000),
        ("pipeline_jobs", "y" * 7000),
    ],
)
def test_no_notification_stops_a_listening_worker(
    db_url: str, conn: Conn, channel: str, payload: str
) -> None:
    with running_worker(db_url, ["effect"]) as worker:
        conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))
        first = enqueue(conn, "effect", {"n": 1})
        wait_for(lambda: status(conn, first) == "done", what="a job after the notification")
        conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))
        second = enqueue(conn, "effect", {"n": 2})
        wait_for(lambda: status(conn, second) == "done", what="a job after another one")
        assert worker.fatal is None


def test_a_stage_that_ignores_its_timeout_gives_its_slot_back_at_once(
    db_url: str, conn: Conn
) -> None:
    one_slot = FAST.model_copy(update={"concurrency": 1})
    stuck = enqueue(conn, "stubborn", {"seconds": 3})
    with running_worker(db_url, ["stubborn", "effect"], one_slot):
        wait_for(lambda: status(conn, stuck) == "failed", what="the stuck job to time out")
        # One slot, and its thread is still asleep: a replacement thread runs the next job.
        after = enqueue(conn, "effect", {"n": 5})
        wait_for(lambda: status(conn, after) == "done", timeout=2.5, what="the next job")
    assert job(conn, stuck) == ("failed", 1, "timed out after 0.3 s")
    notes = [r[0] for r in conn.execute("SELECT note FROM effects").fetchall()]
    assert "stubborn finished" not in notes


def test_a_worker_with_too_many_stuck_threads_stops_and_says_why(db_url: str, conn: Conn) -> None:
    strict = FAST.model_copy(update={"concurrency": 1, "max_stuck_threads": 1})
    for _ in range(2):
        enqueue(conn, "stubborn", {"seconds": 5})
    with running_worker(db_url, ["stubborn"], strict, expect_exit=1) as worker:
        wait_for(lambda: worker.fatal is not None, timeout=10, what="the worker to give up")
    assert "stage threads ignored their timeout" in (worker.fatal or "")


def test_a_timed_out_process_stage_is_killed(db_url: str, conn: Conn, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    stuck = enqueue(conn, "stubborn_child", {"seconds": 60, "mark": str(pid_file)})
    with running_worker(db_url, ["stubborn_child"]):
        wait_for(lambda: status(conn, stuck) == "failed", timeout=20, what="the timeout")
    pid = int(pid_file.read_text())
    wait_for(lambda: not _alive(pid), timeout=5, what="the child process to be gone")
    assert job(conn, stuck) == ("failed", 1, "timed out after 0.5 s")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_every_job_of_a_stage_in_one_run_stores_its_own_output(db_url: str, conn: Conn) -> None:
    root = enqueue(conn, "repeat", {"left": 5})
    spread = enqueue(conn, "spread", {"left": 6})
    with running_worker(db_url, ["repeat", "spread"]):
        wait_for(
            lambda: (
                conn.execute("SELECT count(*) FROM pipeline.jobs WHERE status <> 'done'").fetchone()
                == (0,)
                and conn.execute("SELECT count(*) FROM pipeline.jobs").fetchone() == (13,)
            ),
            what="both runs to finish",
        )
    per_run = dict(
        conn.execute(
            "SELECT root_id, count(*) FROM pipeline.outputs WHERE stage = 'repeat' GROUP BY 1"
        ).fetchall()
    )
    assert per_run == {root: 6, spread: 6}


def test_a_rerun_of_the_same_job_reuses_its_output_and_redoes_nothing(
    db_url: str, conn: Conn
) -> None:
    job_id = enqueue(conn, "repeat", {"left": 0})
    # An earlier run of this very job committed its output, then its worker died.
    conn.execute(
        "INSERT INTO pipeline.outputs (root_id, stage, part, job_id, attempt, output) "
        "VALUES (%s, 'repeat', NULL, %s, 1, '{\"left\": 42}')",
        (job_id, job_id),
    )
    with running_worker(db_url, ["repeat"]):
        wait_for(lambda: status(conn, job_id) == "done", what="the re-run")
    rows = conn.execute(
        "SELECT output FROM pipeline.outputs WHERE job_id = %s", (job_id,)
    ).fetchall()
    assert rows == [({"left": 42},)]


def test_the_heartbeat_covers_a_lease_shorter_than_the_stage_default(
    db_url: str, conn: Conn
) -> None:
    # The nap stage beats every 0.5 s for its 2 s lease; this row was enqueued with 1 s.
    job_id = enqueue(conn, "nap", {"seconds": 2.5, "mark": "short lease"})
    conn.execute("UPDATE pipeline.active_jobs SET lease_seconds = 1 WHERE id = %s", (job_id,))
    quick = FAST.model_copy(update={"reclaim_interval_s": 0.1})
    with running_worker(db_url, ["nap"], quick):
        wait_for(lambda: status(conn, job_id) == "done", timeout=15, what="the nap to finish")
    assert job(conn, job_id)[:2] == ("done", 1)
    row = conn.execute("SELECT claims FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone()
    assert row == (1,), "the job was reclaimed mid-run"


def test_a_worker_whose_row_was_pruned_registers_again(db_url: str, conn: Conn) -> None:
    with running_worker(db_url, ["nap"]) as worker:
        busy = enqueue(conn, "nap", {"seconds": 1.5})
        wait_for(lambda: status(conn, busy) == "running", what="the nap to start")
        conn.execute("DELETE FROM pipeline.workers")
        wait_for(
            lambda: (
                conn.execute(
                    "SELECT count(*) FROM pipeline.workers WHERE id = %s", (worker.id,)
                ).fetchone()
                == (1,)
            ),
            timeout=5,
            what="the worker row to come back",
        )


def test_stopping_releases_a_job_past_the_grace_period_without_charging_it(
    db_url: str, conn: Conn
) -> None:
    waiter = enqueue(conn, "waiter", {"seconds": 60})
    quick_grace = FAST.model_copy(update={"grace_period_s": 0.2})
    with running_worker(db_url, ["waiter"], quick_grace):
        wait_for(lambda: status(conn, waiter) == "running", what="the waiter to start")
    state, attempts, error = job(conn, waiter)
    assert (state, attempts, error) == ("queued", 0, "released at worker shutdown")
