"""Waits under a kill storm: workers SIGKILLed at random while many jobs wait for input and
several processes signal them at once, each signal committed with a row of its own in the same
transaction. Every wait must be resumed exactly once (one committed signal, its token the one the
job's output and its wait's payload carry), every job done, nothing duplicated.

CHAOS_SEED=N replays the same job durations, victims and signal order (not the same timing)."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal as os_signal
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pg_pipeline import JobRequest, NoWaitingStep, enqueue_many, signal
from pg_pipeline.admin import list_waits
from tests.acceptance.cli import WorkerProcess
from tests.chaos.conftest import Report, chaos_env
from tests.chaos.fleet import Fleet
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.chaos]

JOBS = 300
WORKERS = 3
SIGNALLERS = 4
CONCURRENCY = "4"
KILL_EVERY_S = 1.2  #: mean pause between kills: a loaded machine takes a second to start one
STORM_LIMIT_S = 60.0  #: the kills stop here even if jobs remain; then they must settle
SETTLE_S = 90.0
MIN_KILLS = 3

SIGNALS_DDL = """
CREATE TABLE IF NOT EXISTS chaos_signals (
    job_id bigint NOT NULL, token bigint NOT NULL, pid int NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
)
"""


def signaller(db_url: str, seed: int, until: float, report: str) -> None:
    """A process answering open waits in a random order until every job is done (or `until`,
    a time.time()): each signal commits with its row in chaos_signals, or not at all. Writes
    how many it resumed and how many were refused to `report`."""
    rng = random.Random(seed)
    resumed = refused = 0
    with psycopg.connect(db_url) as conn:
        while time.time() < until:
            tasks = list_waits(conn, name="go", limit=50)
            left = conn.execute(
                "SELECT count(*) FROM pipeline.active_jobs WHERE type = 'chaos_wait'"
            ).fetchone()
            conn.commit()
            if not tasks:
                if left == (0,):
                    break
                time.sleep(0.02)
                continue
            rng.shuffle(tasks)
            for task in tasks[:10]:
                token = rng.randrange(2**40)
                try:
                    with conn.transaction():
                        job_id = signal(conn, task.run_id, "go", {"token": token})
                        conn.execute(
                            "INSERT INTO chaos_signals (job_id, token, pid) VALUES (%s, %s, %s)",
                            (job_id, token, os.getpid()),
                        )
                    resumed += 1
                except NoWaitingStep:
                    refused += 1
    Path(report).write_text(json.dumps({"resumed": resumed, "refused": refused}))


def test_waits_resume_exactly_once_under_a_kill_storm_and_concurrent_signals(
    db_url: str, chaos_conn: psycopg.Connection[Any], tmp_path: Path, chaos_report: Report
) -> None:
    seed = int(os.environ.get("CHAOS_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    chaos_conn.execute(SIGNALS_DDL)
    enqueue_many(
        chaos_conn, [JobRequest("chaos_wait", {"ms": rng.randint(0, 150)}) for _ in range(JOBS)]
    )
    fleet = Fleet(chaos_env(db_url, tmp_path / "home"), tmp_path, "--stage", "chaos_wait")
    started = time.monotonic()
    spawn = multiprocessing.get_context("spawn")
    reports = [tmp_path / f"signaller{i}.json" for i in range(SIGNALLERS)]
    until = time.time() + STORM_LIMIT_S + SETTLE_S
    signallers = [
        spawn.Process(target=signaller, args=(db_url, rng.randrange(2**32), until, str(r)))
        for r in reports
    ]
    kills = 0
    try:
        live: list[tuple[str, WorkerProcess]] = [
            fleet.start(None, "--concurrency", CONCURRENCY) for _ in range(WORKERS)
        ]
        for p in signallers:
            p.start()

        def done() -> int:
            row = chaos_conn.execute(
                "SELECT count(*) FROM pipeline.jobs WHERE type = 'chaos_wait' AND status = 'done'"
            ).fetchone()
            return int(row[0]) if row else 0

        storm_ends = started + STORM_LIMIT_S
        while done() < JOBS and time.monotonic() < storm_ends:
            time.sleep(KILL_EVERY_S * rng.uniform(0.5, 1.5))
            i = rng.randrange(len(live))
            os.kill(live[i][1].pid, os_signal.SIGKILL)
            live[i][1].wait(timeout=30)
            kills += 1
            live[i] = fleet.start(None, "--concurrency", CONCURRENCY)
        storm_s = time.monotonic() - started
        wait_for(lambda: done() == JOBS, timeout=SETTLE_S, what="every waiting job to finish")
        for p in signallers:
            p.join(timeout=60)
        counts = [json.loads(r.read_text()) for r in reports if r.exists()]
    finally:
        for p in signallers:
            if p.is_alive():
                p.kill()
        fleet.close()

    jobs = chaos_conn.execute(
        """
        SELECT j.id, j.status,
               (SELECT count(*) FROM chaos_signals s WHERE s.job_id = j.id) AS signals,
               (SELECT min(s.token) FROM chaos_signals s WHERE s.job_id = j.id) AS token,
               (SELECT w.resolution FROM pipeline.waits w WHERE w.job_id = j.id) AS resolution,
               (SELECT (w.payload ->> 'token')::bigint FROM pipeline.waits w
                WHERE w.job_id = j.id) AS delivered,
               (SELECT (o.output ->> 'token')::bigint FROM pipeline.outputs o
                WHERE o.job_id = j.id) AS output_token,
               (SELECT count(*) FROM pipeline.outputs o WHERE o.job_id = j.id) AS outputs,
               (SELECT coalesce(sum(e.writes), 0) FROM chaos_effects e WHERE e.job_id = j.id)
                   AS effects,
               (SELECT count(*) FROM pipeline.job_attempts a
                WHERE a.job_id = j.id AND a.outcome = 'waiting') AS waits,
               j.crash_reclaims
        FROM pipeline.jobs j WHERE j.type = 'chaos_wait' ORDER BY j.id
        """
    ).fetchall()
    resumed = sum(c["resumed"] for c in counts)
    refused = sum(c["refused"] for c in counts)
    chaos_report(
        "waits",
        jobs=JOBS,
        kills=kills,
        signals=resumed,
        refused=refused,
        # jobs whose worker died under them, before or after their wait
        reclaimed=sum(1 for j in jobs if j[10] > 0),
        waited_twice=sum(1 for j in jobs if j[9] > 1),
        storm_s=f"{storm_s:.1f}",
        seconds=f"{time.monotonic() - started:.1f}",
        seed=seed,
    )
    assert kills >= MIN_KILLS, f"the work was over after {kills} kills: nothing was tested"
    assert len(counts) == SIGNALLERS, "a signaller process did not report"
    assert len(jobs) == JOBS
    bad = [
        j
        for j in jobs
        if not (
            j[1] == "done"
            and j[2] == 1  # exactly one committed signal
            and j[4] == "signalled"
            and j[3] == j[5] == j[6]  # its token delivered, and the output made from it
            and j[7] == 1
            and j[8] == 1  # one effect, written once
            and j[9] >= 1
        )
    ]
    assert not bad, f"jobs not resumed exactly once (first 10): {bad[:10]}"
    assert resumed == JOBS, (resumed, refused)
