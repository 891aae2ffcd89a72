"""The Completer on its own against a real database: it writes a transition, fenced, and
publishes each settlement to the metrics and to every subscriber, once."""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import enqueue
from pg_pipeline.outcomes import Complete, Fail
from pg_pipeline.store import ClaimedJob, JobStore
from pg_pipeline.worker.completer import Completer, Settled
from tests.integration.parts import Heard
from tests.support.slots import held_slots
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=1)
LONG = float("inf")  #: `until` for writes that may retry as long as they like


class Broken:
    def settled(self, job: ClaimedJob, settled: Settled) -> None:
        raise RuntimeError("a bug in a subscriber")


class Metrics:
    def __init__(self) -> None:
        self.results: list[tuple[str, str]] = []
        self.batches: list[int] = []

    def settled(self, stage: str, result: str) -> None:
        self.results.append((stage, result))

    def acknowledged(self, count: int, seconds: float) -> None:
        self.batches.append(count)


def claim(conn: Conn, store: JobStore) -> ClaimedJob:
    enqueue(conn, "noop", {})
    [job] = store.claim(["noop"], 1, WORKER)
    return job


def status(conn: Conn, job_id: int) -> str:
    row = conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone()
    return "" if row is None else str(row[0])


def completer(
    pool: ConnectionPool,
    *subscribers: Any,
    metrics: Metrics | None = None,
    halt: threading.Event | None = None,
) -> Completer:
    made = Completer(
        JobStore(pool),
        halt=halt or threading.Event(),
        retry_max_s=0.5,
        batch_max=10,
        metrics=metrics,
    )
    for subscriber in subscribers:
        made.subscribe(subscriber)
    return made


def test_a_written_settlement_is_published_to_every_subscriber_and_counted_once(
    conn: Conn, pool: ConnectionPool
) -> None:
    metrics, first, second = Metrics(), Heard(), Heard()
    c = completer(pool, first, second, metrics=metrics)
    job = claim(conn, c.store)
    assert c.apply(job, Fail("bad input"), until=LONG) == Settled.FAILED
    assert status(conn, job.id) == "failed"
    assert first.heard == second.heard == [(job.id, Settled.FAILED)]
    assert metrics.results == [("noop", "failed")]


def test_a_plain_completion_is_published_once_its_batch_is_written(
    conn: Conn, pool: ConnectionPool
) -> None:
    metrics, heard = Metrics(), Heard()
    c = completer(pool, heard, metrics=metrics)
    jobs = [claim(conn, c.store) for _ in range(3)]
    assert [c.apply(job, Complete(), until=LONG) for job in jobs] == [Settled.BATCHED] * 3
    assert heard.heard == [], "published before it was written"
    acknowledger = threading.Thread(target=c.run_acks)
    acknowledger.start()
    c.close()
    acknowledger.join(timeout=10)
    assert sorted(heard.heard) == [(job.id, Settled.DONE) for job in jobs]
    assert sum(metrics.batches) == 3 and metrics.results == [("noop", "done")] * 3
    assert {status(conn, job.id) for job in jobs} == {"done"}


def test_a_stale_claims_write_changes_nothing_and_is_published_as_lost(
    conn: Conn, pool: ConnectionPool
) -> None:
    heard = Heard()
    c = completer(pool, heard)
    job = claim(conn, c.store)
    stale = job._replace(claim=job.claim + 1)
    assert c.apply(stale, Fail("late"), until=LONG) == Settled.LOST
    assert status(conn, job.id) == "running"
    assert heard.heard == [(job.id, Settled.LOST)]


def test_a_failing_subscriber_does_not_keep_the_others_from_hearing(
    conn: Conn, pool: ConnectionPool
) -> None:
    heard = Heard()
    c = completer(pool, Broken(), heard)
    job = claim(conn, c.store)
    assert c.apply(job, Fail("x"), until=LONG) == Settled.FAILED
    assert heard.heard == [(job.id, Settled.FAILED)]


def test_what_a_child_process_settled_is_published_as_if_written_here(
    conn: Conn, pool: ConnectionPool
) -> None:
    metrics, heard = Metrics(), Heard()
    c = completer(pool, heard, metrics=metrics)
    job = claim(conn, c.store)
    c.publish(job, Settled.QUEUED)
    assert heard.heard == [(job.id, Settled.QUEUED)]
    assert metrics.results == [("noop", "queued")]


class Locker:
    """An operator's open transaction, holding row locks until release()."""

    def __init__(self, db_url: str) -> None:
        self.conn = psycopg.connect(db_url)

    def lock_job(self, job_id: int) -> None:
        self.conn.execute("SELECT 1 FROM pipeline.active_jobs WHERE id = %s FOR UPDATE", (job_id,))

    def lock_slots(self, tenant: str, stage: str) -> None:
        self.conn.execute(
            "SELECT 1 FROM pipeline.tenant_slots WHERE tenant_id = %s AND stage = %s FOR UPDATE",
            (tenant, stage),
        )

    def release(self) -> None:
        self.conn.rollback()
        self.conn.close()


def test_a_locked_job_row_is_settled_alone_and_the_rest_of_its_batch_at_once(
    conn: Conn, pool: ConnectionPool, db_url: str
) -> None:
    heard, halt = Heard(), threading.Event()
    c = completer(pool, heard, halt=halt)
    locked, *others = [claim(conn, c.store) for _ in range(4)]
    operator = Locker(db_url)
    operator.lock_job(locked.id)
    threads = [threading.Thread(target=c.run_acks), threading.Thread(target=c.run_locked)]
    for thread in threads:
        thread.start()
    try:
        for job in (locked, *others):
            c.apply(job, Complete(), until=LONG)
        wait_for(lambda: len(heard.heard) == 3, timeout=10, what="the unlocked jobs confirmed")
        assert sorted(heard.heard) == [(job.id, Settled.DONE) for job in others]
        assert status(conn, locked.id) == "running"
    finally:
        operator.release()
    wait_for(lambda: len(heard.heard) == 4, timeout=10, what="the locked job confirmed")
    assert heard.heard[-1] == (locked.id, Settled.DONE)
    assert status(conn, locked.id) == "done"
    c.close()
    halt.set()
    for thread in threads:
        thread.join(timeout=5)


def test_a_completion_waiting_for_a_locked_row_is_written_after_the_acknowledger_ended(
    conn: Conn, pool: ConnectionPool, db_url: str
) -> None:
    """The locked-rows thread ends with the acknowledger only once nothing waits: a job handed
    over before is still written when its lock goes, without a halt."""
    heard, halt = Heard(), threading.Event()
    c = completer(pool, heard, halt=halt)
    job = claim(conn, c.store)
    operator = Locker(db_url)
    operator.lock_job(job.id)
    acknowledger, locked = (
        threading.Thread(target=c.run_acks),
        threading.Thread(target=c.run_locked),
    )
    acknowledger.start()
    locked.start()
    try:
        c.apply(job, Complete(), until=LONG)
        c.close()
        acknowledger.join(timeout=10)
        assert not acknowledger.is_alive()
        assert locked.is_alive(), "the locked-rows thread left a job waiting for its row"
    finally:
        operator.release()
    locked.join(timeout=10)
    assert not locked.is_alive(), "the locked-rows thread outlived its last job"
    assert heard.heard == [(job.id, Settled.DONE)]
    assert status(conn, job.id) == "done"
    halt.set()


def test_a_completion_waiting_for_a_locked_row_says_how_many_jobs_wait_in_words(
    conn: Conn, pool: ConnectionPool, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    halt = threading.Event()
    c = completer(pool, halt=halt)
    job = claim(conn, c.store)
    operator = Locker(db_url)
    operator.lock_job(job.id)
    threads = [threading.Thread(target=c.run_acks), threading.Thread(target=c.run_locked)]
    caplog.set_level(logging.WARNING, logger="pg_pipeline.worker.completer")
    for thread in threads:
        thread.start()
    try:
        c.apply(job, Complete(), until=LONG)
        wait_for(lambda: said_locked(caplog), timeout=10, what="the wait to be said")
    finally:
        operator.release()
    wait_for(lambda: status(conn, job.id) == "done", timeout=10, what="the job completed")
    c.close()
    halt.set()
    for thread in threads:
        thread.join(timeout=5)
    # One job in the singular: "1 job", never "the jobs".
    [said] = said_locked(caplog)
    assert f": 1 job ({job.id}), held by this worker" in said, said
    assert "jobs" not in said.replace("the others", ""), said


def said_locked(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "locked by another" in r.getMessage()]


def test_an_acknowledgement_never_waits_for_a_capped_tenants_counter(
    conn: Conn, pool: ConnectionPool, db_url: str
) -> None:
    """Completing a capped job gives its slot back without touching its tenant's slot counter,
    which a claim holds locked until it commits: the batch is confirmed while the lock is held,
    and the slot is free at once."""
    heard, halt = Heard(), threading.Event()
    c = completer(pool, heard, halt=halt)
    enqueue(conn, "capped", {}, tenant_id="t1")
    [capped] = c.store.claim(["capped"], 1, WORKER, {"capped": 3})
    plain = claim(conn, c.store)
    operator = Locker(db_url)
    operator.lock_slots("t1", "capped")
    threads = [threading.Thread(target=c.run_acks), threading.Thread(target=c.run_locked)]
    for thread in threads:
        thread.start()
    try:
        c.apply(capped, Complete(), until=LONG)
        c.apply(plain, Complete(), until=LONG)
        wait_for(lambda: len(heard.heard) == 2, timeout=10, what="both jobs confirmed")
        assert sorted(heard.heard) == sorted([(capped.id, Settled.DONE), (plain.id, Settled.DONE)])
        assert status(conn, capped.id) == "done"
        assert held_slots(conn) == {("t1", "capped"): 0}
    finally:
        operator.release()
    c.close()
    halt.set()
    for thread in threads:
        thread.join(timeout=5)
