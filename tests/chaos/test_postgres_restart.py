"""PostgreSQL restarted (fast shutdown: every connection cut) twice under running workers."""

from __future__ import annotations

import functools
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest

from pg_pipeline import JobRequest, enqueue_many
from pg_pipeline.embedded import embedded_url
from pg_pipeline.migrate import migrate
from tests.chaos.conftest import STAGES, Report, chaos_env
from tests.chaos.fleet import Fleet
from tests.chaos.ledger import Tally, count_done, job_rows, show, unfinished
from tests.support import pg
from tests.support.apps.chaos_app import CHAOS_EFFECTS_DDL
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.chaos]

JOBS = 600
JOB_MS = 60  #: 600 jobs on 2 x 4 slots: some 5 s of work, enough to restart twice inside it
BETWEEN = 60  #: jobs finished before the first restart, and between the two
T = TypeVar("T")


@pytest.fixture
def private_server() -> Iterator[tuple[str, Path]]:
    """A server of the test's own, whatever DATABASE_URL says: this test restarts it."""
    scratch = Path(tempfile.mkdtemp(prefix="pgc-"))  # short: the socket lives in there
    try:
        yield embedded_url(scratch / "pgdata"), scratch / "pgdata"
    finally:
        if (scratch / "pgdata").exists():
            pg.stop_server(scratch / "pgdata")
        shutil.rmtree(scratch, ignore_errors=True)


def test_two_postgres_restarts_lose_and_duplicate_nothing(
    private_server: tuple[str, Path], tmp_path: Path, chaos_report: Report
) -> None:
    url, pgdata = private_server

    def query(what: Callable[[psycopg.Connection[Any]], T]) -> T:
        with psycopg.connect(url, autocommit=True) as c:  # a fresh one: restarts cut them
            return what(c)

    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        conn.execute(CHAOS_EFFECTS_DDL)
        enqueue_many(conn, [JobRequest("chaos_sleep", {"ms": JOB_MS}) for _ in range(JOBS)])
    started = time.monotonic()
    fleet = Fleet(chaos_env(url, tmp_path / "home"), tmp_path, *STAGES)
    restarts: list[int] = []  # jobs done when each restart began
    logs: list[str] = []
    try:
        workers = [fleet.start(None, "--concurrency", "4")[1] for _ in range(2)]
        for _ in range(2):
            target = (restarts[-1] if restarts else 0) + BETWEEN
            wait_for(
                functools.partial(lambda t: query(count_done) >= t, target),
                timeout=60,
                what=f"{target} jobs done before restart {len(restarts) + 1}",
            )
            restarts.append(query(count_done))
            pg.restart_server(pgdata)
            assert query(count_done) < JOBS, "every job was done before the restart"
        wait_for(lambda: query(unfinished) == 0, timeout=90, what="every job after the restarts")
        alive = [w.alive() for w in workers]
        assert all(alive), f"a worker died with the database: {alive}"
        for worker in workers:
            worker.signal(signal.SIGTERM)
        codes = [w.wait(timeout=60) for w in workers]
        assert codes == [0, 0], "\n".join(fleet.log_tail(n) for n in fleet.started)
        logs = [w.log() for w in workers]
    finally:  # reported however it ended, with what the jobs looked like then
        try:
            tally = Tally.of(query(job_rows))
            chaos_report(
                "postgres-restart",
                why=tally.charged_reasons() and f"charged innocents: {tally.charged_reasons()}",
                jobs=JOBS,
                restarts=len(restarts),
                done_at_restarts="/".join(map(str, restarts)),
                lost=len(tally.lost),
                duplicates=tally.duplicates,
                stuck=len(tally.stuck),
                charged_innocents=len(tally.charged_innocents),
                suspects=tally.suspects,
                seconds=f"{time.monotonic() - started:.1f}",
            )
            if tally.charged_innocents:  # their full errors, in the captured output
                print(show(tally.charged_innocents))
        finally:
            fleet.close()
    assert not tally.stuck, show(tally.stuck)
    assert not tally.lost, "jobs not done exactly once:\n" + show(tally.lost)
    assert tally.duplicates == 0
    assert not tally.mismatched_attempts, show(tally.mismatched_attempts)
    assert all("database unavailable" in log for log in logs), "no worker saw the outage"
