"""Attempt history and logs per job (issue 23, items 2 and 3): every way an attempt ends writes
its row in the statement that ends it, with the lines the stage logged; a job's last_error is
its last attempt's; retention deletes a job's attempts with it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import WorkerSettings, enqueue
from pg_pipeline.admin import jobs as admin
from pg_pipeline.attempt_logs import ATTEMPT_LOG_CAP, AttemptLog
from pg_pipeline.maintenance.retention import prune
from pg_pipeline.queries import Q
from pg_pipeline.store import ClaimedJob, JobStore, reclaim_expired
from tests.integration import workers
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.history import cancel, make_past_days
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=7)
FAST = WorkerSettings(concurrency=2, poll_interval_s=0.2, reclaim_interval_s=0.5, grace_period_s=5)


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(EFFECTS_DDL)
        yield c


def status(conn: Conn, job_id: int) -> str | None:
    row = conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone()
    return None if row is None else row[0]


def attempts(conn: Conn, job_id: int) -> list[tuple[Any, ...]]:
    """(attempt, claims, outcome, error, worker_id) of each ended attempt, oldest first."""
    return [
        (a.attempt, a.claims, a.outcome, a.error, a.worker_id)
        for a in admin.job_attempts(conn, job_id)
    ]


def claimed(store: JobStore, stage: str = "noop") -> ClaimedJob:
    [job] = store.claim([stage], 1, WORKER)
    return job


# -- through a real worker ------------------------------------------------------------------


def test_a_job_done_after_a_failure_keeps_both_attempts_and_no_last_error(
    db_url: str, conn: Conn
) -> None:
    job_id = enqueue(conn, "talkative", {"fail_times": 1})
    with workers.running_worker(db_url, ["talkative"], FAST):
        wait_for(lambda: status(conn, job_id) == "done", what="the job to succeed")

    detail = admin.get_job(conn, job_id)
    assert detail is not None and detail.last_error is None
    first, second = detail.attempt_history
    assert (first.attempt, first.outcome, second.attempt, second.outcome) == (
        1,
        "retried",
        2,
        "done",
    )
    assert first.error is not None and "upstream down on attempt 1" in first.error
    assert second.error is None
    for a in (first, second):
        assert a.worker_id is not None and a.claimed_at is not None
        assert a.started_at is not None and a.claimed_at <= a.started_at <= a.ended_at
        assert a.duration_s is not None and a.duration_s >= 0
    logs = admin.job_logs(conn, job_id)
    assert logs is not None
    assert [a.logs.count("\n") + 1 if a.logs else 0 for a in logs] == [2, 2]
    assert "attempt 1 line 0" in (logs[0].logs or "")
    assert "attempt 2 line 1" in (logs[1].logs or "") and "attempt 1" not in (logs[1].logs or "")


def test_lines_past_the_cap_are_counted_not_kept(db_url: str, conn: Conn) -> None:
    line_bytes = 1000
    lines = ATTEMPT_LOG_CAP // line_bytes + 20
    job_id = enqueue(conn, "talkative", {"lines": lines, "line_bytes": line_bytes})
    with workers.running_worker(db_url, ["talkative"], FAST):
        wait_for(lambda: status(conn, job_id) == "done", what="the job to finish")

    [logged] = admin.job_logs(conn, job_id) or []
    assert logged.logs is not None
    assert len(logged.logs.encode()) <= ATTEMPT_LOG_CAP
    kept = logged.logs.count("\n") + 1
    assert kept + logged.logs_dropped == lines and logged.logs_dropped >= 20
    # The first lines are the ones kept, in order.
    assert "attempt 1 line 0 " in logged.logs.splitlines()[0]


def test_a_timed_out_attempt_says_so(db_url: str, conn: Conn) -> None:
    job_id = enqueue(conn, "slowpoke", {"seconds": 60})
    with workers.running_worker(db_url, ["slowpoke"], FAST):
        wait_for(lambda: status(conn, job_id) == "failed", what="the job to time out twice")
    assert [(a[0], a[2], a[3]) for a in attempts(conn, job_id)] == [
        (1, "timed_out", "timed out after 0.3 s"),
        (2, "timed_out", "timed out after 0.3 s"),
    ]


# -- each finishing statement -----------------------------------------------------------------


def test_each_finishing_write_records_its_attempt(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    done, retried, failed, given_back = (enqueue(conn, "noop", {}) for _ in range(4))
    jobs = {j.id: j for j in store.claim(["noop"], 4, WORKER)}
    log = AttemptLog(started=1_700_000_000.5, text="a line\nanother", dropped=3)

    assert store.acknowledge([jobs[done].fence], lock_wait_s=1.0, logs={done: log}) == {done}
    assert store.retry_later(jobs[retried], "boom", 60, log=log)
    assert store.fail(jobs[failed], "timed out after 1 s", outcome="timed_out")
    assert store.retry_later(jobs[given_back], "not run", 5, refund=True)

    assert attempts(conn, done) == [(1, 1, "done", None, WORKER)]
    assert attempts(conn, retried) == [(1, 1, "retried", "boom", WORKER)]
    assert attempts(conn, failed) == [(1, 1, "timed_out", "timed out after 1 s", WORKER)]
    assert attempts(conn, given_back) == [(1, 1, "given_back", "not run", WORKER)]
    [done_logs] = admin.job_logs(conn, done) or []
    assert (done_logs.logs, done_logs.logs_dropped) == ("a line\nanother", 3)
    [done_attempt] = admin.job_attempts(conn, done)
    assert done_attempt.started_at is not None
    assert done_attempt.started_at.timestamp() == pytest.approx(1_700_000_000.5)


def test_a_stale_claim_writes_no_attempt(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    job_id = enqueue(conn, "noop", {})
    stale = claimed(store)
    assert store.retry_later(stale, "boom", 0)
    assert not store.fail(stale, "late")
    assert store.complete([stale.fence]) == set()
    assert [a[2] for a in attempts(conn, job_id)] == ["retried"]


def test_reclaim_release_and_cancel_record_the_attempts_they_end(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    lost, released, cancelled = (enqueue(conn, "noop", {}) for _ in range(3))
    jobs = {j.id: j for j in store.claim(["noop"], 3, WORKER)}
    conn.execute(
        "UPDATE pipeline.active_jobs SET leased_until = now() - interval '1 second' WHERE id = %s",
        (lost,),
    )
    assert [row[0] for row in reclaim_expired(conn)] == [lost]
    assert store.release([jobs[released].fence]) == {released: "queued"}
    assert cancel(conn, cancelled, "no longer wanted")

    assert [a[2:4] for a in attempts(conn, lost)] == [
        ("lost", "lease expired: its worker died or stalled")
    ]
    assert [a[2:4] for a in attempts(conn, released)] == [
        ("given_back", "released at worker shutdown")
    ]
    assert [a[2:] for a in attempts(conn, cancelled)] == [("cancelled", "no longer wanted", WORKER)]


def test_cancelling_a_tree_records_the_attempts_of_its_running_jobs(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    root = enqueue(conn, "noop", {})
    running_child, queued_child = (enqueue(conn, "noop", {}) for _ in range(2))
    conn.execute(
        "UPDATE pipeline.active_jobs SET root_id = %s, parent_id = %s WHERE id IN (%s, %s)",
        (root, root, running_child, queued_child),
    )
    conn.execute(
        "UPDATE pipeline.active_jobs SET run_after = now() + interval '1 hour' WHERE id = %s",
        (queued_child,),
    )
    assert {j.id for j in store.claim(["noop"], 3, WORKER)} == {root, running_child}

    cancelled = conn.execute(Q["cancel_tree"], {"id": root, "reason": "stop"}).fetchall()

    assert {row[0] for row in cancelled} == {root, running_child, queued_child}
    assert [a[2:4] for a in attempts(conn, running_child)] == [("cancelled", "stop")]
    assert [a[2:4] for a in attempts(conn, root)] == [("cancelled", "stop")]
    assert attempts(conn, queued_child) == []


def test_cancelling_a_queued_job_records_no_attempt(conn: Conn) -> None:
    job_id = enqueue(conn, "noop", {})
    assert cancel(conn, job_id)
    assert attempts(conn, job_id) == []


# -- retention --------------------------------------------------------------------------------


def test_retention_deletes_a_runs_attempts_with_it(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    old, recent, kept = (enqueue(conn, "noop", {}) for _ in range(3))
    said = AttemptLog(0.0, "a line", 0)
    fences = [j.fence for j in store.claim(["noop"], 3, WORKER)]
    assert store.complete(fences, dict.fromkeys((old, recent, kept), said)) == {old, recent, kept}
    make_past_days(conn, 30)
    conn.execute(
        "UPDATE pipeline.job_history SET finished_at = now() - interval '30 days' WHERE id = %s",
        (old,),
    )
    conn.execute(
        "UPDATE pipeline.job_history SET finished_at = now() - interval '1 hour' WHERE id = %s",
        (recent,),
    )

    # A day dropped whole (old), then runs deleted one by one (recent); kept is newer.
    assert prune(conn, 60.0).jobs == 2

    left = conn.execute("SELECT job_id FROM pipeline.job_attempts ORDER BY job_id").fetchall()
    assert left == [(kept,)]


def test_a_first_claim_done_without_lines_is_read_from_the_job_alone(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    job_id = enqueue(conn, "noop", {})
    assert store.acknowledge([claimed(store).fence], lock_wait_s=1.0) == {job_id}

    assert conn.execute("SELECT count(*) FROM pipeline.job_attempts").fetchone() == (0,)
    assert attempts(conn, job_id) == [(1, 1, "done", None, WORKER)]
    [logged] = admin.job_logs(conn, job_id) or []
    assert (logged.outcome, logged.logs) == ("done", None)
