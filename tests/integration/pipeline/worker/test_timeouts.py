"""Timeouts, driven directly against a real database: a claimed job past its deadline is
settled as timed out, its stage is told, and its runner thread is replaced."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import REGISTRY, Context
from pg_pipeline.worker.inflight import InFlight
from tests.integration.parts import Conn, Parts, job_row, worker_parts
from tests.support.waiting import wait_for


def claim_and_start(parts: Parts, conn: Conn, *, started: float | None = None) -> InFlight:
    """A claimed job, running (as far as the table knows) in a thread the test holds."""
    job = parts.claim(conn, "slowpoke", {"seconds": 60})
    ctx = Context.for_job(job, REGISTRY, None)
    lease_until = time.monotonic() + job.lease_seconds
    entry = InFlight(job, REGISTRY.get("slowpoke"), ctx, False, lease_until=lease_until)
    parts.table.add(entry)
    assert parts.table.start(entry, started)
    return entry


@pytest.fixture
def parts(db_url: str, pool: ConnectionPool) -> Iterator[Parts]:
    with worker_parts(db_url, pool, runner_threads=0) as p:
        yield p


def test_a_job_past_its_deadline_is_retried_its_stage_told_and_its_thread_replaced(
    conn: Conn, parts: Parts
) -> None:
    entry = claim_and_start(parts, conn, started=time.monotonic() - 1)
    assert parts.timeouts.expire_once() is None, "a deadline is left"
    assert job_row(conn, entry.job.id) == ("queued", 1, "timed out after 0.3 s")
    assert entry.ctx.lost_lease.is_set(), "the stage was not told to stop"
    assert parts.runners.abandoned == 1, "the stuck thread's slot was not handed on"
    assert parts.table.free() == 2 and parts.table.get(entry.job.id) is None


def test_a_job_within_its_deadline_is_left_alone_and_the_wait_is_until_its_deadline(
    conn: Conn, parts: Parts
) -> None:
    now = time.monotonic()
    entry = claim_and_start(parts, conn, started=now)
    wait = parts.timeouts.expire_once(now=now + 0.1)
    assert wait == pytest.approx(0.2)
    assert job_row(conn, entry.job.id)[:1] == ("running",) and not entry.ctx.lost_lease.is_set()


def test_the_timeouts_thread_wakes_for_a_deadline_set_while_it_slept(
    conn: Conn, parts: Parts
) -> None:
    thread = threading.Thread(target=parts.timeouts.run, daemon=True)
    thread.start()
    # The thread starts with no deadline to sleep until; the job's comes a claim's round
    # trips later, and only the table's word can wake the thread for it.
    entry = claim_and_start(parts, conn)
    wait_for(lambda: job_row(conn, entry.job.id)[:1] == ("queued",), timeout=10, what="the timeout")
    parts.halt.set()
    parts.timeouts.stop()
    thread.join(timeout=5)
    assert not thread.is_alive(), "the timeouts thread did not stop"
