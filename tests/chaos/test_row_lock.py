"""An operator's open transaction holds a few running jobs' rows locked for two leases in the
middle of a run. The workers neither stall on them nor lose them: the other jobs are claimed,
heartbeated and acknowledged meanwhile, the locked ones are settled as soon as the lock goes,
and no job runs twice."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from pg_pipeline import JobRequest, enqueue_many
from tests.chaos.conftest import Report
from tests.chaos.fleet import Fleet
from tests.chaos.ledger import Tally, count_done, job_rows, show, unfinished
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.chaos]

JOBS = 600  #: half of them with an output and an effect, half with a plain completion
JOB_MS = 40
LEASE_S = 2  #: the chaos stages' lease
LOCKED_PER_TYPE = 3
#: Plain completions enqueued once the rows are locked: on a quiet machine the first ones may all
#: be done before the lock, and these must be acknowledged while it lasts.
LATE_ACKS = 200

Conn = psycopg.Connection[Any]


@pytest.fixture
def operator(db_url: str) -> Iterator[Conn]:
    """A session whose transaction holds its row locks until the test rolls it back."""
    with psycopg.connect(db_url) as c:
        yield c
        c.rollback()


def lock_running(operator: Conn, stage: str) -> list[int]:
    """Lock some running jobs of `stage`, as `SELECT ... FOR UPDATE` in an open transaction."""
    rows = operator.execute(
        "SELECT id FROM pipeline.active_jobs WHERE status = 'running' AND type = %s "
        "ORDER BY id LIMIT %s FOR UPDATE",
        (stage, LOCKED_PER_TYPE),
    ).fetchall()
    return [row[0] for row in rows]


def acknowledged(conn: Conn) -> int:
    """Plain completions confirmed so far."""
    row = conn.execute(
        "SELECT count(*) FROM pipeline.jobs WHERE type = 'chaos_ack' AND status = 'done'"
    ).fetchone()
    return int(row[0]) if row else 0


def leases_ran_out(conn: Conn, ids: list[int]) -> bool:
    row = conn.execute(
        "SELECT bool_and(leased_until < now()) FROM pipeline.jobs WHERE id = ANY(%s)", (ids,)
    ).fetchone()
    return bool(row and row[0])


def test_rows_locked_for_two_leases_during_a_run_make_no_job_run_twice(
    chaos_conn: Conn, operator: Conn, fleet: Fleet, chaos_report: Report
) -> None:
    conn = chaos_conn
    enqueue_many(
        conn,
        [JobRequest("chaos_sleep" if i % 2 else "chaos_ack", {"ms": JOB_MS}) for i in range(JOBS)],
    )
    started = time.monotonic()
    workers = [fleet.start(None, "--concurrency", "4")[1] for _ in range(2)]
    locked: list[int] = []
    done_before = done_after = acked_before = acked_after = -1
    lock_s = 0.0
    alive_during: list[bool] = []
    try:
        wait_for(lambda: count_done(conn) >= 60, timeout=60, what="60 jobs done first")
        for stage in ("chaos_ack", "chaos_sleep"):
            # Rows a worker writes right now are waited for; a stage with none running yet
            # is looked at again.
            locked += wait_for(
                lambda s=stage: lock_running(operator, s), what=f"a running {stage} job to lock"
            )
        began = time.monotonic()
        done_before, acked_before = count_done(conn), acknowledged(conn)
        enqueue_many(conn, [JobRequest("chaos_ack", {"ms": JOB_MS}) for _ in range(LATE_ACKS)])
        wait_for(
            lambda: time.monotonic() - began >= 2 * LEASE_S and leases_ran_out(conn, locked),
            timeout=30,
            what="two leases to pass over the locked jobs",
        )
        done_after, acked_after = count_done(conn), acknowledged(conn)
        alive_during = [w.alive() for w in workers]
        assert {row.status for row in job_rows(conn, locked)} == {"running"}
        operator.rollback()
        lock_s = time.monotonic() - began
        wait_for(lambda: unfinished(conn) == 0, timeout=90, what="every job after the lock")
        fleet.drain(workers, "the lock")
    finally:
        rows = job_rows(conn)
        tally = Tally.of([r for r in rows if r.type != "chaos_ack"])
        plain = [r for r in rows if r.type == "chaos_ack"]
        reruns = [r for r in rows if r.claims > 1]
        chaos_report(
            "row-lock",
            jobs=JOBS + LATE_ACKS,
            locked=len(locked),
            lock_s=f"{lock_s:.1f}",
            done_during_lock=done_after - done_before,
            acknowledged_during_lock=acked_after - acked_before,
            worker_exits=sum(not alive for alive in alive_during),
            reruns=len(reruns),
            suspects=sum(r.suspect for r in rows),
            lost=len(tally.lost) + sum(r.status != "done" for r in plain),
            duplicates=tally.duplicates,
            seconds=f"{time.monotonic() - started:.1f}",
        )
    assert alive_during == [True, True], "a worker exited while the rows were locked"
    assert done_after - done_before > 100, "the workers stalled behind the locked rows"
    # The locked rows' batches would hold back every plain completion behind them.
    assert acked_after - acked_before > 50, "acknowledgements stalled behind the locked rows"
    assert not reruns, "jobs run again:\n" + show(reruns)
    assert not tally.lost, "jobs not done exactly once:\n" + show(tally.lost)
    assert tally.duplicates == 0
    assert {r.status for r in plain} == {"done"}
