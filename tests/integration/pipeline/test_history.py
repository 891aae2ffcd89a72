"""Hot jobs and the history (issue 21): every way a job finishes moves it, in one statement,
out of pipeline.active_jobs into pipeline.job_history; a retry moves it back; dedup keys hold
across the move; a missing day's partition is made by the finishing write itself."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import enqueue
from pg_pipeline.admin import jobs as admin
from pg_pipeline.admin.jobs import Change
from pg_pipeline.enqueue import enqueue_once
from pg_pipeline.maintenance.retention import prune
from pg_pipeline.queries import Q
from pg_pipeline.store import (
    FREE_CRASH_RECLAIMS,
    FREE_RELEASES,
    ClaimedJob,
    JobStore,
    reclaim_expired,
)
from tests.support.history import cancel, finish, make_past_days
from tests.support.slots import held_slots
from tests.support.waiting import lock_waiters, wait_for

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=7)
JOIN = 900_000


def one(conn: Conn, sql: str, *params: Any) -> Any:
    row = conn.execute(sql, params or None).fetchone()
    assert row is not None
    return row[0]


def waiting_join(conn: Conn) -> None:
    """A fan-out of two children whose join waits: the job under test is one of them."""
    conn.execute("INSERT INTO pipeline.joins (id, root_id, total) VALUES (%s, %s, 2)", (JOIN, JOIN))


def enqueued_child(conn: Conn) -> int:
    job_id = enqueue(conn, "noop", {}, tenant_id="t1")
    conn.execute("UPDATE pipeline.active_jobs SET join_id = %s WHERE id = %s", (JOIN, job_id))
    return job_id


def claimed(store: JobStore) -> ClaimedJob:
    """Claimed under a cap, so that it holds its tenant's slot."""
    [job] = store.claim(["noop"], 1, WORKER, {"noop": 5})
    return job


def final_attempt(conn: Conn, job: ClaimedJob, **counters: int) -> None:
    sets = ", ".join(f"{name} = {int(value)}" for name, value in counters.items())
    conn.execute(  # type: ignore[call-overload]
        f"UPDATE pipeline.active_jobs SET attempts = max_attempts, {sets} WHERE id = %s",
        (job.id,),
    )


def _complete(conn: Conn, store: JobStore, job: ClaimedJob) -> None:
    assert store.complete([job.fence]) == {job.id}


def _acknowledge(conn: Conn, store: JobStore, job: ClaimedJob) -> None:
    assert store.acknowledge([job.fence], lock_wait_s=1.0) == {job.id}


def _fail(conn: Conn, store: JobStore, job: ClaimedJob) -> None:
    assert store.fail(job, "boom")


def _release_on_final(conn: Conn, store: JobStore, job: ClaimedJob) -> None:
    final_attempt(conn, job, releases=FREE_RELEASES)
    assert store.release([job.fence]) == {job.id: "failed"}


def _reclaim_on_final(conn: Conn, store: JobStore, job: ClaimedJob) -> None:
    final_attempt(conn, job, crash_reclaims=FREE_CRASH_RECLAIMS)
    conn.execute(
        "UPDATE pipeline.active_jobs SET leased_until = now() - interval '1 second' WHERE id = %s",
        (job.id,),
    )
    assert reclaim_expired(conn) == [(job.id, "noop", "failed")]


def _cancel_running(conn: Conn, store: JobStore, job: ClaimedJob) -> None:
    assert cancel(conn, job.id, "stop")


Finish = Callable[[Conn, JobStore, ClaimedJob], None]
#: way of finishing a running job -> (status, last_error) it leaves in the history
RUNNING_PATHS: dict[str, tuple[Finish, str, str | None]] = {
    "complete": (_complete, "done", None),
    "acknowledge": (_acknowledge, "done", None),
    "fail": (_fail, "failed", "boom"),
    "release on the final attempt": (
        _release_on_final,
        "failed",
        f"released at worker shutdown on its final attempt, {FREE_RELEASES + 1} releases in all",
    ),
    "reclaim on the final attempt": (
        _reclaim_on_final,
        "failed",
        "lease expired on final attempt",
    ),
    "cancel while running": (_cancel_running, "cancelled", "stop"),
}


def assert_moved(conn: Conn, job_id: int, status: str, error: str | None) -> None:
    assert one(conn, "SELECT count(*) FROM pipeline.active_jobs WHERE id = %s", job_id) == 0
    row = conn.execute(
        "SELECT status, last_error, finished_at > now() - interval '1 minute', holds_slot "
        "FROM pipeline.job_history WHERE id = %s",
        (job_id,),
    ).fetchall()
    assert row == [(status, error, True, False)]
    # The join counted it once, and waits for its other child.
    assert conn.execute(
        "SELECT done + failed, finished_at FROM pipeline.joins WHERE id = %s", (JOIN,)
    ).fetchall() == [(1, None)]


@pytest.mark.parametrize("path", list(RUNNING_PATHS))
def test_every_way_a_running_job_finishes_moves_it_into_the_history(
    conn: Conn, pool: ConnectionPool, path: str
) -> None:
    finish, status, error = RUNNING_PATHS[path]
    store = JobStore(pool)
    waiting_join(conn)
    job_id = enqueued_child(conn)
    job = claimed(store)
    assert job.id == job_id
    assert held_slots(conn) == {("t1", "noop"): 1}

    finish(conn, store, job)

    assert_moved(conn, job_id, status, error)
    assert held_slots(conn) == {("t1", "noop"): 0}
    # The view still shows it, once.
    assert one(conn, "SELECT count(*) FROM pipeline.jobs WHERE id = %s", job_id) == 1


@pytest.mark.parametrize("how", ["by id", "in bulk"])
def test_a_cancelled_queued_job_moves_into_the_history(conn: Conn, how: str) -> None:
    waiting_join(conn)
    job_id = enqueued_child(conn)
    if how == "by id":
        assert admin.cancel_job(conn, job_id, reason="stop") is Change.DONE
    else:
        assert admin.cancel_queued(conn, "noop", reason="stop") == 1
    assert_moved(conn, job_id, "cancelled", "stop")


def test_a_finished_jobs_writes_fail_its_fence_once_it_has_moved(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    enqueue(conn, "noop", {})
    job = claimed(store)
    assert store.complete([job.fence]) == {job.id}
    assert store.complete([job.fence]) == set()
    assert not store.fail(job, "late")
    assert one(conn, "SELECT status FROM pipeline.jobs WHERE id = %s", job.id) == "done"


def test_a_retry_moves_the_job_back_under_its_id_and_its_join_waits_again(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    waiting_join(conn)
    job_id = enqueued_child(conn)
    assert store.fail(claimed(store), "boom")

    assert admin.retry_job(conn, job_id) is Change.DONE

    assert one(conn, "SELECT count(*) FROM pipeline.job_history WHERE id = %s", job_id) == 0
    assert conn.execute(
        "SELECT status, finished_at FROM pipeline.active_jobs WHERE id = %s", (job_id,)
    ).fetchall() == [("queued", None)]
    assert one(conn, "SELECT done + failed FROM pipeline.joins WHERE id = %s", JOIN) == 0
    # And it finishes again like any job.
    assert store.complete([claimed(store).fence]) == {job_id}
    assert one(conn, "SELECT status FROM pipeline.jobs WHERE id = %s", job_id) == "done"


def test_a_retry_that_waits_for_its_days_detach_takes_the_job_from_the_kept_rows(
    db_url: str, conn: Conn
) -> None:
    # The retry's statement (functions/requeue_finished.sql) waits for retention's lock on the
    # history, and must read the rows as they are after it: the job copied into the kept rows.
    make_past_days(conn, 31)
    job_id = enqueue(conn, "noop", {}, tenant_id="t1")
    finish(conn, job_id, "failed", ago="30 days", error="boom")
    day = one(
        conn, "SELECT tableoid::regclass::text FROM pipeline.job_history WHERE id = %s", job_id
    )
    retried: list[tuple[Any, ...]] = []
    with psycopg.connect(db_url) as pruning:
        [(kept,)] = pruning.execute(
            Q["prune_detach_partition"], {"part": day, "survivors": [job_id]}
        ).fetchall()
        assert kept == 1

        def retry() -> None:
            with psycopg.connect(db_url, autocommit=True) as c:
                retried.extend(c.execute(Q["retry"], {"id": job_id}).fetchall())

        retrying = threading.Thread(target=retry)
        retrying.start()
        wait_for(lambda: lock_waiters(conn) > 0, what="the retry to wait for the detach")
        pruning.commit()
    retrying.join(timeout=60)

    assert retried == [(job_id, "noop")]
    assert conn.execute(
        "SELECT status, attempts, max_attempts, last_error FROM pipeline.active_jobs WHERE id = %s",
        (job_id,),
    ).fetchall() == [("queued", 0, 5, "boom")]
    assert one(conn, "SELECT count(*) FROM pipeline.job_history_kept") == 0


def test_a_dedup_key_holds_after_its_job_finished(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    first, new = enqueue_once(conn, "noop", {}, dedup_key="k")
    assert new
    assert store.complete([claimed(store).fence]) == {first}
    again, new = enqueue_once(conn, "noop", {}, dedup_key="k")
    assert (again, new) == (first, False)
    assert one(conn, "SELECT count(*) FROM pipeline.jobs") == 1


def test_a_finishing_write_makes_the_missing_day_of_the_history(
    conn: Conn, pool: ConnectionPool
) -> None:
    today = one(
        conn,
        "SELECT 'pipeline.job_history_' || to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')",
    )
    conn.execute(f"DROP TABLE {today}")  # type: ignore[call-overload]
    store = JobStore(pool)
    enqueue(conn, "noop", {})
    job = claimed(store)

    assert store.complete([job.fence]) == {job.id}

    assert one(conn, "SELECT tableoid::regclass::text FROM pipeline.job_history") == today


def test_the_history_days_carry_their_bounds_and_reading_them_locks_no_day(
    conn: Conn, pool: ConnectionPool
) -> None:
    make_past_days(conn, 2)
    days = {
        name: (lower, upper)
        for name, lower, upper in conn.execute(
            "SELECT part::text, lower, upper FROM pipeline.history_days"
        ).fetchall()
    }
    expected = conn.execute(
        "SELECT 'pipeline.job_history_' || to_char(d, 'YYYYMMDD'), "
        "d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC' "
        "FROM generate_series(0, 2) AS n, "
        "LATERAL (SELECT (now() AT TIME ZONE 'UTC')::date - n AS d) AS day"
    ).fetchall()
    assert {name: days.get(name) for name, _, _ in expected} == {
        name: (lower, upper) for name, lower, upper in expected
    }
    # A day a prune is detaching is locked: whoever reads the days (the rollups' fold, a worker's
    # start) must not wait for it.
    locked = next(iter(days))
    with pool.connection() as detacher, detacher.transaction():
        detacher.execute(f"LOCK TABLE {locked} IN ACCESS EXCLUSIVE MODE")  # type: ignore[call-overload]
        with pool.connection() as reader, reader.transaction():
            reader.execute("SET LOCAL lock_timeout = '200ms'")
            # count(upper): a count(*) would leave the bounds unread.
            read = reader.execute("SELECT count(upper) FROM pipeline.history_days").fetchone()
    assert read == (len(days),)


def test_a_dedup_key_is_free_again_once_retention_pruned_its_job(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    first, _ = enqueue_once(conn, "noop", {}, dedup_key="k")
    assert store.complete([claimed(store).fence]) == {first}
    make_past_days(conn, 30)
    conn.execute(
        "UPDATE pipeline.job_history SET finished_at = now() - interval '30 days' WHERE id = %s",
        (first,),
    )
    assert prune(conn, 7 * 86_400.0).jobs == 1
    again, new = enqueue_once(conn, "noop", {}, dedup_key="k")
    assert new and again != first
