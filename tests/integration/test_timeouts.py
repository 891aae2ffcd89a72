"""Timeouts, driven directly against a real database: a claimed job past its deadline is
settled as timed out, its stage is told, and its runner thread is replaced."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.apps.jobs_app  # noqa: F401  registers the test stages
from pipeline import REGISTRY, Context, enqueue
from pipeline.store import JobStore
from pipeline.worker.completer import Completer
from pipeline.worker.inflight import InFlight, InFlightTable
from pipeline.worker.runners import Runners
from pipeline.worker.timeouts import Timeouts
from tests.waiting import wait_for

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=1)


class Parts:
    def __init__(self, pool: ConnectionPool) -> None:
        self.halt = threading.Event()
        self.store = JobStore(pool)
        self.table = InFlightTable(2, threading.Event())
        self.completer = Completer(
            self.store,
            halt=self.halt,
            retry_max_s=0.5,
            batch_max=10,
            on_settled=lambda job, settled: self.table.forget_claim(job),
        )
        # Runner threads that take nothing: the job is "running" in a thread the test holds.
        self.runners = Runners(
            lambda e: None, on_error=lambda e: None, count=0, max_abandoned=4, on_too_many=print
        )
        self.timeouts = Timeouts(self.table, self.runners, self.completer, halt=self.halt)

    def claim_and_start(self, conn: Conn, *, started: float | None = None) -> InFlight:
        enqueue(conn, "slowpoke", {"seconds": 60})
        [job] = self.store.claim(["slowpoke"], 1, WORKER)
        spec = REGISTRY.get("slowpoke")
        entry = InFlight(
            job,
            spec,
            Context.for_job(job, REGISTRY, None),
            isolated=False,
            lease_until=time.monotonic() + job.lease_seconds,
        )
        self.table.add(entry)
        assert self.table.start(entry, started)
        return entry


@pytest.fixture
def parts(pool: ConnectionPool) -> Iterator[Parts]:
    p = Parts(pool)
    yield p
    p.halt.set()
    p.timeouts.stop()
    p.runners.stop()


def row(conn: Conn, job_id: int) -> tuple[Any, ...]:
    """(status, attempts, last_error); () for no such job."""
    query = "SELECT status, attempts, last_error FROM jobs WHERE id = %s"
    return tuple(conn.execute(query, (job_id,)).fetchone() or ())


def test_a_job_past_its_deadline_is_retried_its_stage_told_and_its_thread_replaced(
    conn: Conn, parts: Parts
) -> None:
    entry = parts.claim_and_start(conn, started=time.monotonic() - 1)
    assert parts.timeouts.expire_once() is None, "a deadline is left"
    assert row(conn, entry.job.id) == ("queued", 1, "timed out after 0.3 s")
    assert entry.ctx.lost_lease.is_set(), "the stage was not told to stop"
    assert parts.runners.abandoned == 1, "the stuck thread's slot was not handed on"
    assert parts.table.free() == 2 and parts.table.get(entry.job.id) is None


def test_a_job_within_its_deadline_is_left_alone_and_the_wait_is_until_its_deadline(
    conn: Conn, parts: Parts
) -> None:
    now = time.monotonic()
    entry = parts.claim_and_start(conn, started=now)
    wait = parts.timeouts.expire_once(now=now + 0.1)
    assert wait == pytest.approx(0.2)
    assert row(conn, entry.job.id)[:1] == ("running",) and not entry.ctx.lost_lease.is_set()


def test_the_timeouts_thread_wakes_for_a_deadline_set_while_it_slept(
    conn: Conn, parts: Parts
) -> None:
    thread = threading.Thread(target=parts.timeouts.run, daemon=True)
    thread.start()
    # The thread starts with no deadline to sleep until; the job's comes a claim's round
    # trips later, and only the table's word can wake the thread for it.
    entry = parts.claim_and_start(conn)
    wait_for(lambda: row(conn, entry.job.id)[:1] == ("queued",), timeout=10, what="the timeout")
    parts.halt.set()
    parts.timeouts.stop()
    thread.join(timeout=5)
    assert not thread.is_alive(), "the timeouts thread did not stop"
