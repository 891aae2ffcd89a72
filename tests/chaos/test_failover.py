"""A real failover in the middle of a run: the primary is stopped and its streaming replica (made
with pg_basebackup) is promoted, while workers and a submitter keep going on a connection
string that names both servers and asks for the writable one (`target_session_attrs`). Every
job submitted is done exactly once, with one output; none is lost; no worker exits."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest

from pg_pipeline import JobRequest, enqueue_many
from pg_pipeline.migrate import migrate
from tests.chaos import replica
from tests.chaos.conftest import STAGES, Report, chaos_env
from tests.chaos.fleet import Fleet
from tests.chaos.ledger import Tally, count_done, job_rows, unfinished
from tests.support.apps.chaos_app import CHAOS_EFFECTS_DDL
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.chaos]

FIRST_JOBS = 300
BATCH = 10  #: jobs per submission
JOB_MS = 40
AFTER_PROMOTION = 5  #: batches the submitter gets in on the new primary before it stops
T = TypeVar("T")


@dataclass
class Servers:
    primary: Path
    replica: Path
    url: str  #: names both, for whichever takes writes


@pytest.fixture
def servers() -> Iterator[Servers]:
    """A primary and its streaming replica of the test's own, whatever DATABASE_URL says."""
    scratch = Path(tempfile.mkdtemp(prefix="pgf-"))  # short: the sockets live in there
    primary, standby = scratch / "a" / "pgdata", scratch / "b" / "pgdata"
    try:
        primary_url = replica.start_primary(primary)
        replica_url = replica.start_replica(primary_url, standby)
        yield Servers(primary, standby, replica.either(primary_url, replica_url))
    finally:
        replica.stop(standby)
        replica.stop(primary)
        shutil.rmtree(scratch, ignore_errors=True)


@dataclass
class Submitter:
    """Submits a batch of jobs after another, each with its own dedup keys, retrying a batch
    until it is in: a batch whose commit went unanswered is not doubled by its retry."""

    url: str
    keys: list[str] = field(default_factory=list)  #: of the jobs confirmed in
    confirmed: list[float] = field(default_factory=list)  #: monotonic, per batch
    failures: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        batch = 0
        while not self.stop.is_set():
            keys = [f"submitted-{batch}-{i}" for i in range(BATCH)]
            requests = [JobRequest("chaos_sleep", {"ms": JOB_MS}, dedup_key=k) for k in keys]
            while not self.stop.is_set():
                try:
                    with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                        enqueue_many(conn, requests)
                except psycopg.Error:
                    self.failures += 1
                    self.stop.wait(0.1)
                    continue
                self.keys += keys
                self.confirmed.append(time.monotonic())
                break
            batch += 1
            self.stop.wait(0.05)  # a steady trickle, not a flood

    def since(self, moment: float) -> int:
        return sum(at > moment for at in self.confirmed)


def test_a_failover_to_a_promoted_replica_loses_and_repeats_no_job(
    servers: Servers, tmp_path: Path, chaos_report: Report
) -> None:
    url = servers.url

    def query(what: Callable[[psycopg.Connection[Any]], T]) -> T:
        with psycopg.connect(url, autocommit=True) as c:  # a fresh one: the failover cuts them
            return what(c)

    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        conn.execute(CHAOS_EFFECTS_DDL)
        first = [
            JobRequest("chaos_sleep", {"ms": JOB_MS}, dedup_key=f"first-{i}")
            for i in range(FIRST_JOBS)
        ]
        enqueue_many(conn, first)
    started = time.monotonic()
    submitter = Submitter(url)
    submitting = threading.Thread(target=submitter.run, daemon=True)
    fleet = Fleet(chaos_env(url, tmp_path / "home"), tmp_path, *STAGES)
    done_at_stop = -1
    outage_s = 0.0
    alive_after: list[bool] = []
    tally: Tally | None = None
    try:
        workers = [fleet.start(None, "--concurrency", "4")[1] for _ in range(2)]
        submitting.start()
        wait_for(lambda: query(count_done) >= 60, timeout=60, what="60 jobs done first")
        done_at_stop = query(count_done)
        replica.stop(servers.primary)
        stopped = time.monotonic()
        wait_for(
            lambda: all("database unavailable" in w.log() for w in workers),
            timeout=30,
            what="every worker to find the primary gone",
        )
        replica.promote(servers.replica)
        promoted = time.monotonic()
        outage_s = promoted - stopped
        wait_for(
            lambda: submitter.since(promoted) >= AFTER_PROMOTION,
            timeout=60,
            what="submissions to the new primary",
        )
        submitter.stop.set()
        submitting.join(timeout=30)
        wait_for(lambda: query(unfinished) == 0, timeout=90, what="every job after the failover")
        alive_after = [w.alive() for w in workers]
        fleet.drain(workers, "the failover")
    finally:
        submitter.stop.set()
        try:
            tally = Tally.of(query(job_rows))
            chaos_report(
                "failover",
                why=tally.charged_reasons() and f"charged innocents: {tally.charged_reasons()}",
                jobs=len(tally.innocent),
                submitted=len(submitter.keys),
                submit_retries=submitter.failures,
                done_at_stop=done_at_stop,
                outage_s=f"{outage_s:.1f}",
                worker_exits=sum(not alive for alive in alive_after),
                lost=len(tally.lost),
                duplicates=tally.duplicates,
                stuck=len(tally.stuck),
                reruns=sum(r.claims > 1 for r in tally.innocent),
                suspects=tally.suspects,
                seconds=f"{time.monotonic() - started:.1f}",
            )
        finally:
            fleet.close()
    keys = [f"first-{i}" for i in range(FIRST_JOBS)] + submitter.keys
    found = query(
        lambda c: c.execute(
            "SELECT count(DISTINCT dedup_key) FROM pipeline.jobs WHERE dedup_key = ANY(%s)", (keys,)
        ).fetchone()
    )
    assert found == (len(keys),), "a job confirmed to its submitter is not in the new primary"
    assert submitter.failures > 0, "no submission met the failover"
    assert submitter.since(promoted) >= AFTER_PROMOTION
    tally.check_done_exactly_once()
