"""A kill storm: workers SIGKILLed at random under load, with poison jobs that kill their own
worker mixed in. Nothing may be lost, nothing done twice, and only the poison may fail.

The storm is random; its seed is in the summary line, and CHAOS_SEED=N replays the same job
durations, poison positions and choice of victims (not the same timing)."""

from __future__ import annotations

import contextlib
import functools
import os
import random
import signal
import time
from typing import Any

import psycopg
import pytest

from pg_pipeline import JobRequest, enqueue_many
from tests.acceptance.cli import WorkerProcess
from tests.chaos.conftest import Report
from tests.chaos.fleet import Fleet
from tests.chaos.ledger import Tally, job_rows, show, unfinished
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.chaos]

INNOCENT = 2000
POISON = 5
WORKERS = 4
CONCURRENCY = "4"
KILL_EVERY_S = 1.0  #: mean pause between kills (uniform in [0.5, 1.5) of it)
STORM_LIMIT_S = 100.0  #: the storm stops here even if jobs remain; the test then fails
SETTLE_S = 45.0  #: after the storm, for the last reclaims and isolated runs
MIN_KILLS = 3  #: fewer, and the storm was over before it began


def lingering(fleet: Fleet, timeout: float = 5.0) -> dict[int, str]:
    """Processes still alive this long after their worker was killed (they should follow it)."""
    with contextlib.suppress(AssertionError):
        wait_for(lambda: not fleet.leftovers(), timeout=timeout, what="orphans to exit")
    return fleet.leftovers()


def started_up(worker: WorkerProcess) -> bool:
    return " started: " in worker.log()


def test_kill_storm_loses_nothing_and_duplicates_nothing(
    chaos_conn: psycopg.Connection[Any], fleet: Fleet, chaos_report: Report
) -> None:
    seed = int(os.environ.get("CHAOS_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    requests = [JobRequest("chaos_sleep", {"ms": rng.randint(0, 50)}) for _ in range(INNOCENT)]
    for _ in range(POISON):  # spread through the queue, which is claimed in id order
        requests.insert(rng.randrange(len(requests)), JobRequest("chaos_poison", {}))
    started = time.monotonic()
    enqueue_many(chaos_conn, requests)

    live: list[tuple[str, WorkerProcess]] = [
        fleet.start(None, "--concurrency", CONCURRENCY) for _ in range(WORKERS)
    ]
    kills = self_kills = 0
    ended_by_storm: set[int] = set()
    other_deaths: list[str] = []

    def replace_dead() -> None:
        nonlocal self_kills
        for i, (name, worker) in enumerate(live):
            if worker.alive():
                continue
            if worker.proc.returncode == -signal.SIGKILL:
                self_kills += 1  # a poison job ran in the worker's own threads
            else:
                other_deaths.append(f"{name} exited {worker.proc.returncode}")
            live[i] = fleet.start(None, "--concurrency", CONCURRENCY)

    storm_s = 0.0

    def settled() -> bool:
        replace_dead()  # a poison job may still take a worker down
        return unfinished(chaos_conn) == 0

    try:
        storm_ends = started + STORM_LIMIT_S
        while unfinished(chaos_conn) and time.monotonic() < storm_ends:
            time.sleep(KILL_EVERY_S * rng.uniform(0.5, 1.5))  # the storm's pacing
            replace_dead()
            i = rng.randrange(len(live))
            victim = live[i][1]
            if not victim.alive():
                continue  # a poison job got there first: replace_dead() counts it next round
            # A poison job the victim holds (running alone in its child) is ended by this kill,
            # not by its own crash: its last attempt may end "lease expired", legitimately.
            ended_by_storm.update(
                row[0]
                for row in chaos_conn.execute(
                    "SELECT j.id FROM pipeline.jobs j JOIN pipeline.workers w ON w.id = j.worker_id"
                    " WHERE w.pid = %s AND j.type = 'chaos_poison' AND j.status = 'running'",
                    (victim.pid,),
                )
            )
            os.kill(victim.pid, signal.SIGKILL)  # the worker alone, as the OOM killer does
            victim.wait(timeout=30)
            kills += 1
            live[i] = fleet.start(None, "--concurrency", CONCURRENCY)
        storm_s = time.monotonic() - started
        wait_for(settled, timeout=SETTLE_S, what="every job to finish after the storm")
    finally:  # reported however it ended, with what the jobs looked like then
        tally = Tally.of(job_rows(chaos_conn))
        leftovers = lingering(fleet)
        chaos_report(
            "kill-storm",
            why=tally.charged_reasons() and f"charged innocents: {tally.charged_reasons()}",
            jobs=f"{INNOCENT}+{POISON}poison",
            kills=kills,
            self_kills=self_kills,
            lost=len(tally.lost),
            duplicates=tally.duplicates,
            stuck=len(tally.stuck),
            charged_innocents=len(tally.charged_innocents),
            suspects=tally.suspects,
            orphans=len(leftovers),
            storm_s=f"{storm_s:.1f}",
            seconds=f"{time.monotonic() - started:.1f}",
            seed=seed,
        )
        if tally.charged_innocents:  # their full errors, in the captured output
            print(show(tally.charged_innocents))

    assert not leftovers, f"processes outlived their killed worker: {leftovers}"
    assert kills >= MIN_KILLS, f"the work was over after {kills} kills: nothing was tested"
    assert not other_deaths, f"workers died of something else than SIGKILL: {other_deaths}"
    assert not tally.stuck, f"jobs still queued or running ({tally.states()}):\n" + show(
        tally.stuck
    )
    assert not tally.failed_innocents, "innocent jobs failed:\n" + show(tally.failed_innocents)
    assert not tally.lost, "innocent jobs without exactly one output and effect:\n" + show(
        tally.lost
    )
    assert tally.duplicates == 0, "duplicate outputs or effects"
    assert not tally.mismatched_attempts, "outputs from another attempt:\n" + show(
        tally.mismatched_attempts
    )
    assert len(tally.poison) == POISON
    bad_poison = [
        r
        for r in tally.bad_poison
        if not (
            r.id in ended_by_storm
            and (r.status, r.last_error) == ("failed", "lease expired on final attempt")
            and not r.outputs
            and not r.effect_writes
        )
    ]
    assert not bad_poison, "poison jobs that did not fail with the crash:\n" + show(bad_poison)
    assert all(r.attempts == r.max_attempts for r in tally.poison), show(tally.poison)
    # Charging an innocent job is allowed only once its free crash reclaims are used up.
    early = [r for r in tally.charged_innocents if r.crash_reclaims < 3]
    assert not early, "innocent jobs charged for a crash that was not theirs:\n" + show(early)
    for name, worker in live:  # the survivors stop cleanly, once they are up (the last one
        # may still be importing, when SIGTERM would just end the interpreter)
        wait_for(functools.partial(started_up, worker), what=f"{name} to start")
        worker.signal(signal.SIGTERM)
    for name, worker in live:
        assert worker.wait(timeout=60) == 0, fleet.log_tail(name)
