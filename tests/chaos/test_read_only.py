"""The database takes no writes for 10 s in the middle of a run, as in a maintenance window
(`default_transaction_read_only = on`) or a failover onto a standby while DNS still names the
demoted primary: every write fails with 25006. No worker exits, and every job is done exactly
once with one output."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest

from pg_pipeline import JobRequest, enqueue_many
from tests.chaos.conftest import Report
from tests.chaos.fleet import Fleet
from tests.chaos.ledger import Tally, count_done, job_rows, unfinished
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.chaos]

JOBS = 400
JOB_MS = 50  #: 400 jobs on 2 x 4 slots: some 3 s of work, the read-only period in the middle
READ_ONLY_S = 10.0
READ_ONLY_ERROR = "read-only transaction"

Conn = psycopg.Connection[Any]


def cut_sessions_but_mine(conn: Conn) -> None:
    """End every other session on this database: the workers' next ones start read-only."""
    conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )


def test_ten_seconds_of_a_read_only_database_stop_no_worker_and_lose_no_job(
    chaos_conn: Conn, fleet: Fleet, chaos_report: Report
) -> None:
    conn = chaos_conn
    database = conn.info.dbname
    enqueue_many(conn, [JobRequest("chaos_sleep", {"ms": JOB_MS}) for _ in range(JOBS)])
    started = time.monotonic()
    workers = [fleet.start(None, "--concurrency", "4")[1] for _ in range(2)]
    done_before = done_after = -1
    read_only_s = 0.0
    alive_during: list[bool] = []
    tally: Tally | None = None
    try:
        wait_for(lambda: count_done(conn) >= 60, timeout=60, what="60 jobs done first")
        conn.execute(f'ALTER DATABASE "{database}" SET default_transaction_read_only = on')
        began = time.monotonic()
        try:
            cut_sessions_but_mine(conn)  # this session, made before, can still write
            done_before = count_done(conn)
            wait_for(
                lambda: all(READ_ONLY_ERROR in w.log() for w in workers),
                timeout=READ_ONLY_S,
                what="every worker to meet the read-only database",
            )
            # The period lasts its 10 s, the workers' writes failing all along.
            wait_for(
                lambda: time.monotonic() - began >= READ_ONLY_S,
                timeout=READ_ONLY_S + 1,
                what="the read-only period to pass",
            )
            alive_during = [w.alive() for w in workers]
            done_after = count_done(conn)
        finally:
            # The workers' sessions stay read-only: each is replaced when a write meets that.
            conn.execute(f'ALTER DATABASE "{database}" RESET default_transaction_read_only')
            read_only_s = time.monotonic() - began
        wait_for(lambda: unfinished(conn) == 0, timeout=90, what="every job after the period")
        fleet.drain(workers, "the read-only period")
    finally:
        tally = Tally.of(job_rows(conn))
        chaos_report(
            "read-only",
            jobs=JOBS,
            read_only_s=f"{read_only_s:.1f}",
            done_during=done_after - done_before,
            worker_exits=sum(not alive for alive in alive_during),
            lost=len(tally.lost),
            duplicates=tally.duplicates,
            stuck=len(tally.stuck),
            reruns=sum(r.claims > 1 for r in tally.innocent),
            suspects=tally.suspects,
            charged_innocents=len(tally.charged_innocents),
            seconds=f"{time.monotonic() - started:.1f}",
        )
    assert alive_during == [True, True], "a worker exited during the read-only period"
    tally.check_done_exactly_once()
    assert not tally.charged_innocents, tally.charged_reasons()
