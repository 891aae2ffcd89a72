"""A worker SIGSTOPped past its lease while it holds jobs, resumed once another worker finished
them: its late results are discarded, it writes nothing, and it goes on working."""

from __future__ import annotations

import signal
import time
from typing import Any

import psycopg
import pytest

from pg_pipeline import JobRequest, enqueue_many
from tests.chaos.conftest import Report
from tests.chaos.fleet import Fleet
from tests.chaos.ledger import Tally, job_rows, show
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.chaos]

HELD = 10
AFTER = 20  #: jobs enqueued once the stale worker is back, for it alone
SLOW_MS = 5000  #: what a job takes in the stale worker: it is paused long before that


def snapshot(conn: psycopg.Connection[Any], ids: list[int]) -> list[Any]:
    """Every column of the jobs, and their outputs and effects: any write would show here."""
    return conn.execute(
        """
        SELECT to_jsonb(j), to_jsonb(o), to_jsonb(e)
        FROM pipeline.jobs AS j
        LEFT JOIN pipeline.outputs AS o ON o.job_id = j.id
        LEFT JOIN chaos_effects AS e ON e.job_id = j.id
        WHERE j.id = ANY(%s::bigint[])
        ORDER BY j.id
        """,
        (ids,),
    ).fetchall()


def held_by(conn: psycopg.Connection[Any], pid: int, ids: list[int]) -> int:
    row = conn.execute(
        """
        SELECT count(*) FROM pipeline.jobs AS j JOIN pipeline.workers AS w ON w.id = j.worker_id
        WHERE j.status = 'running' AND w.pid = %s AND j.id = ANY(%s::bigint[])
        """,
        (pid, ids),
    ).fetchone()
    return int(row[0]) if row else 0


def done(conn: psycopg.Connection[Any], ids: list[int]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pipeline.jobs WHERE status = 'done' AND id = ANY(%s::bigint[])",
        (ids,),
    ).fetchone()
    return row is not None and row[0] == len(ids)


def test_worker_paused_past_its_lease_writes_nothing_and_carries_on(
    chaos_conn: psycopg.Connection[Any], fleet: Fleet, chaos_report: Report
) -> None:
    conn = chaos_conn
    slow = {"ms": 10, "slow_worker": "stale", "slow_ms": SLOW_MS}
    ids = enqueue_many(conn, [JobRequest("chaos_sleep", slow) for _ in range(HELD)])
    started = time.monotonic()
    _, stale = fleet.start("stale", "--concurrency", str(HELD))
    stale_writes = -1
    try:
        wait_for(lambda: held_by(conn, stale.pid, ids) == HELD, what="the stale one to hold all")
        stale.signal(signal.SIGSTOP)
        paused = time.monotonic()
        _, fresh = fleet.start("fresh", "--concurrency", str(HELD))
        wait_for(lambda: done(conn, ids), timeout=60, what="the fresh worker to finish them")
        assert time.monotonic() - paused > 2, "finished within the lease: nothing was tested"
        before = snapshot(conn, ids)
        fresh.signal(signal.SIGTERM)  # from now on only the stale worker can take work
        assert fresh.wait(timeout=60) == 0, fleet.log_tail("fresh")

        stale.signal(signal.SIGCONT)
        found = conn.execute("SELECT max_attempts FROM pipeline.jobs WHERE id = %s", (ids[0],))
        [max_attempts] = found.fetchone() or (None,)
        discarded = [
            f"job {i} (chaos_sleep, tenant -, attempt 1/{max_attempts}) lost: " for i in ids
        ]
        wait_for(
            lambda: all(d in stale.log() for d in discarded),
            timeout=30,
            what="the stale worker to discard its ten late results",
        )
        after = snapshot(conn, ids)
        more = enqueue_many(conn, [JobRequest("chaos_sleep", {"ms": 10}) for _ in range(AFTER)])
        wait_for(lambda: done(conn, more), timeout=30, what="the resumed worker to carry on")
        stale_writes = sum(r.effect_worker == "stale" for r in job_rows(conn, ids))
    finally:  # reported however it ended, with what the jobs looked like then
        tally = Tally.of(job_rows(conn))
        chaos_report(
            "paused-worker",
            why=tally.charged_reasons() and f"charged innocents: {tally.charged_reasons()}",
            jobs=f"{HELD}+{AFTER}",
            pauses=1,
            lost=len(tally.lost),
            duplicates=tally.duplicates,
            stuck=len(tally.stuck),
            charged_innocents=len(tally.charged_innocents),
            stale_writes=stale_writes,
            seconds=f"{time.monotonic() - started:.1f}",
        )
        if tally.charged_innocents:  # their full errors, in the captured output
            print(show(tally.charged_innocents))

    assert after == before, "the resumed worker changed its lost jobs"
    held = job_rows(conn, ids)
    assert [r.effect_worker for r in held] == ["fresh"] * HELD
    assert not [r for r in held if r.effect_pid == stale.pid or r.effect_writes != 1], show(held)
    # Its lease expired, so each was reclaimed uncharged (suspect) and claimed once more.
    assert [(r.attempts, r.claims, r.crash_reclaims, r.suspect) for r in held] == [
        (1, 2, 1, True)
    ] * HELD, show(held)
    assert all(r.output_attempt == 1 for r in held), show(held)
    assert [r.effect_worker for r in job_rows(conn, more)] == ["stale"] * AFTER
    assert not tally.lost and tally.duplicates == 0 and not tally.stuck, show(tally.lost)
    assert stale.alive(), "losing its leases must not kill the worker"
    stale.signal(signal.SIGTERM)
    assert stale.wait(timeout=60) == 0, fleet.log_tail("stale")
