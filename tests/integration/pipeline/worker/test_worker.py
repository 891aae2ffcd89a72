"""A real Worker in a thread of the test process, against a cloned database."""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import JobRequest, Worker, WorkerSettings, enqueue, enqueue_many
from pg_pipeline.maintenance.reclaim import Reclaimer
from pg_pipeline.maintenance.slots import SlotRepair
from pg_pipeline.queries import Q
from pg_pipeline.store import JobStore
from tests.integration import workers
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.history import finish, make_past_days
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
FAST = WorkerSettings(concurrency=4, poll_interval_s=0.2, reclaim_interval_s=0.5, grace_period_s=5)


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(EFFECTS_DDL)
        yield c


def running_worker(
    db_url: str, stages: list[str], settings: WorkerSettings = FAST, *, expect_exit: int = 0
) -> contextlib.AbstractContextManager[Worker]:
    return workers.running_worker(db_url, stages, settings, expect_exit=expect_exit)


def statuses(conn: Conn) -> dict[str, int]:
    return dict(conn.execute("SELECT status, count(*) FROM pipeline.jobs GROUP BY 1").fetchall())


def job(conn: Conn, job_id: int) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT status, attempts, last_error FROM pipeline.jobs WHERE id = %s", (job_id,)
    ).fetchone()
    assert row is not None
    return tuple(row)


def effects(conn: Conn) -> list[tuple[Any, ...]]:
    return conn.execute("SELECT job_id, attempt, note FROM effects ORDER BY job_id").fetchall()


def test_worker_runs_every_job_once(db_url: str, conn: Conn) -> None:
    ids = enqueue_many(conn, [JobRequest("effect", {"n": i}) for i in range(300)])
    with running_worker(db_url, ["effect"]):
        wait_for(lambda: statuses(conn) == {"done": 300}, what="300 jobs done")
    assert [row[0] for row in effects(conn)] == sorted(ids)


def test_plain_completions_are_acknowledged(db_url: str, conn: Conn) -> None:
    enqueue_many(conn, [JobRequest("noop", {"n": i}) for i in range(500)])
    with running_worker(db_url, ["noop"]):
        wait_for(lambda: statuses(conn) == {"done": 500}, what="500 no-op jobs done")


def test_follow_up_jobs_commit_with_the_completion(db_url: str, conn: Conn) -> None:
    root = enqueue(conn, "chain", {"n": 3}, tenant_id="acme")
    with running_worker(db_url, ["chain"]):
        wait_for(lambda: statuses(conn) == {"done": 4}, what="the chain to finish")
    rows = conn.execute(
        "SELECT id, parent_id, tenant_id, payload->>'n' FROM pipeline.jobs ORDER BY id"
    ).fetchall()
    assert rows[0] == (root, None, "acme", "3")
    for parent, child in itertools.pairwise(rows):
        assert child[1] == parent[0] and child[2] == "acme"
    assert [r[2] for r in effects(conn)] == ["chain 3", "chain 2", "chain 1", "chain 0"]


def test_a_payload_that_no_longer_validates_fails_permanently(db_url: str, conn: Conn) -> None:
    job_id = enqueue(conn, "nap", {"seconds": 0})
    conn.execute(
        'UPDATE pipeline.active_jobs SET payload = \'{"seconds": "later"}\' WHERE id = %s',
        (job_id,),
    )
    with running_worker(db_url, ["nap"]):
        wait_for(lambda: job(conn, job_id)[0] == "failed", what="the job to fail")
    _, attempts, error = job(conn, job_id)
    assert attempts == 1 and "payload no longer valid" in error and "seconds" in error


def test_retryable_errors_retry_with_backoff_until_success(db_url: str, conn: Conn) -> None:
    job_id = enqueue(conn, "flaky", {"fail_times": 2})
    with running_worker(db_url, ["flaky"]):
        wait_for(lambda: job(conn, job_id)[0] == "done", what="the flaky job to succeed")
    _, attempts, error = job(conn, job_id)
    # The job's error is its last attempt's: none. The failed ones keep theirs.
    assert attempts == 3 and error is None
    tried = conn.execute(
        "SELECT outcome, error FROM pipeline.job_attempts WHERE job_id = %s ORDER BY claims",
        (job_id,),
    ).fetchall()
    assert [t[0] for t in tried] == ["retried", "retried", "done"]
    assert "upstream down on attempt 2" in tried[1][1]
    assert effects(conn) == [(job_id, 3, "ok")]


def test_retryable_errors_end_failed_at_max_attempts(db_url: str, conn: Conn) -> None:
    job_id = enqueue(conn, "flaky", {"fail_times": 99})
    with running_worker(db_url, ["flaky"]):
        wait_for(lambda: job(conn, job_id)[0] == "failed", what="the job to fail")
    _, attempts, error = job(conn, job_id)
    assert attempts == 4 and error.startswith("ConnectionError: upstream down on attempt 4")


def test_permanent_errors_fail_at_once(db_url: str, conn: Conn) -> None:
    job_id = enqueue(conn, "flaky", {"fail_times": 99, "permanent": True})
    with running_worker(db_url, ["flaky"]):
        wait_for(lambda: job(conn, job_id)[0] == "failed", what="the job to fail")
    assert job(conn, job_id)[:2] == ("failed", 1)
    assert "bad input on attempt 1" in job(conn, job_id)[2]


def test_a_job_past_its_timeout_is_retried_then_failed(db_url: str, conn: Conn) -> None:
    job_id = enqueue(conn, "slowpoke", {"seconds": 60})
    with running_worker(db_url, ["slowpoke"]):
        wait_for(lambda: job(conn, job_id)[0] == "failed", what="the job to time out twice")
    assert job(conn, job_id) == ("failed", 2, "timed out after 0.3 s")
    assert effects(conn) == []


def test_cancelling_a_running_job_tells_the_stage_and_writes_nothing(
    db_url: str, conn: Conn
) -> None:
    job_id = enqueue(conn, "waiter", {"seconds": 60})
    with running_worker(db_url, ["waiter"], FAST.model_copy(update={"concurrency": 1})):
        wait_for(lambda: job(conn, job_id)[0] == "running", what="the job to start")
        assert conn.execute(Q["cancel"], {"id": job_id, "reason": "user asked"}).fetchall()
        # One slot: the second job can only run once the first stage heard of the cancel.
        second = enqueue(conn, "waiter", {"seconds": 0, "mark": "second"})
        wait_for(lambda: job(conn, second)[0] == "done", what="the second job")
    assert job(conn, job_id) == ("cancelled", 1, "user asked")
    assert effects(conn) == [(second, 1, "second")]


def test_a_worker_given_a_retention_prunes_old_finished_runs(db_url: str, conn: Conn) -> None:
    old = enqueue(conn, "noop", {"n": 1})
    recent = enqueue(conn, "noop", {"n": 2})
    make_past_days(conn, 2)
    finish(conn, old, ago="2 days")
    finish(conn, recent)
    with running_worker(db_url, ["noop"], FAST.model_copy(update={"retention_s": 86_400})):
        wait_for(
            lambda: (
                conn.execute("SELECT count(*) FROM pipeline.jobs WHERE id = %s", (old,)).fetchone()
                == (0,)
            ),
            what="the old run to be pruned",
        )
    assert conn.execute("SELECT id FROM pipeline.jobs").fetchall() == [(recent,)]


def test_a_workers_first_maintenance_round_waits_for_its_first_claim(
    db_url: str, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first claim is held half a second: a round that starts beside it (as it did, on a
    # thread of its own from the worker's start) runs in that time, before the claim returns.
    seen: list[str] = []
    lock = threading.Lock()
    claim, reclaim, repair = JobStore.claim, Reclaimer.run_once, SlotRepair.run_once

    def note(what: str) -> None:
        with lock:
            seen.append(what)

    def slow_first_claim(*args: Any, **kwargs: Any) -> Any:
        if "claim" not in seen:
            time.sleep(0.5)
            note("claim")
        return claim(*args, **kwargs)

    def noted(what: str, call: Any) -> Any:
        def run_once(self: Any) -> Any:
            note(what)
            return call(self)

        return run_once

    monkeypatch.setattr(JobStore, "claim", slow_first_claim)
    monkeypatch.setattr(Reclaimer, "run_once", noted("reclaim", reclaim))
    monkeypatch.setattr(SlotRepair, "run_once", noted("slot repair", repair))
    enqueue(conn, "noop", {"n": 1})
    with running_worker(db_url, ["noop"]):
        wait_for(lambda: {"reclaim", "slot repair"} <= set(seen), what="the first round")
    assert seen[0] == "claim", seen
