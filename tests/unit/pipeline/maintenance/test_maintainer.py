"""The Maintainer on its own: services on their periods, on a clock the test moves."""

from __future__ import annotations

import random
import threading

import pytest

from pg_pipeline.maintenance import HotVacuum, Maintainer, Pruner, Service
from pg_pipeline.maintenance.blob_sweep import BLOB_GRACE_S
from pg_pipeline.maintenance.maintainer import HOT_VACUUM, JITTER, LONG_ROUNDS
from pg_pipeline.settings import WorkerSettings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def maintainer(services: list[Service], clock: Clock) -> Maintainer:
    return Maintainer(services, halt=threading.Event(), rng=random.Random(3), clock=clock)


def test_every_service_runs_on_the_first_round_then_each_on_its_own_period() -> None:
    clock, ran = Clock(), []
    m = maintainer(
        [
            Service("often", 10, lambda: ran.append("often")),
            Service("rarely", 100, lambda: ran.append("rarely")),
        ],
        clock,
    )
    wait = m.run_due()
    assert ran == ["often", "rarely"]
    assert wait is not None and 10 * (1 - JITTER) <= wait <= 10 * (1 + JITTER)
    clock.now += 10 * (1 - JITTER) - 0.01
    m.run_due()
    assert ran == ["often", "rarely"], "a service ran before its period was up"
    clock.now += 2 * 10 * JITTER + 0.02
    m.run_due()
    assert ran == ["often", "rarely", "often"]
    clock.now += 100 * (1 + JITTER)
    m.run_due()
    assert ran.count("rarely") == 2


def test_a_failing_service_skips_its_round_and_the_others_still_run() -> None:
    clock, ran = Clock(), []

    def broken() -> None:
        ran.append("broken")
        raise ConnectionError("database unavailable")

    m = maintainer(
        [Service("broken", 5, broken), Service("fine", 5, lambda: ran.append("fine"))], clock
    )
    m.run_due()
    clock.now += 5 * (1 + JITTER)
    m.run_due()
    assert ran == ["broken", "fine", "broken", "fine"]


def test_periods_are_jittered_so_workers_started_together_drift_apart() -> None:
    clock = Clock()
    waits = set()
    for seed in range(20):
        m = Maintainer(
            [Service("s", 30, lambda: None)],
            halt=threading.Event(),
            rng=random.Random(seed),
            clock=clock,
        )
        wait = m.run_due()
        assert wait is not None and 30 * (1 - JITTER) <= wait <= 30 * (1 + JITTER)
        waits.add(round(wait, 6))
    assert len(waits) > 15


def test_run_returns_once_halted() -> None:
    halt = threading.Event()
    rounds: list[int] = []

    def service() -> None:
        rounds.append(1)
        halt.set()

    Maintainer([Service("s", 0.01, service)], halt=halt).run()
    assert rounds == [1]


@pytest.mark.parametrize(("retention_s", "retention"), [(None, False), (86400.0, True)])
def test_a_worker_maintains_reclaim_dead_workers_slots_schedules_and_retention_if_asked(
    retention_s: float | None, retention: bool
) -> None:
    settings = WorkerSettings(retention_s=retention_s, reclaim_interval_s=7)
    # The services take the pool but use it only when they run.
    m = Maintainer.for_worker(None, settings, halt=threading.Event())  # type: ignore[arg-type]
    names = [s.name for s in m.services]
    assert names[:4] == ["reclaim", "worker pruning", "slot repair", "scheduler"]
    assert ("retention" in names) is retention
    assert "wait timeouts" in names
    assert m.services[0].interval_s == 7
    # The long rounds on a second thread, the hot table's vacuum on a third, which the
    # worker's pool has a connection for each.
    assert {s.name for s in m.services if s.thread == LONG_ROUNDS} == {"slot repair"} | (
        {"retention"} if retention else set()
    )
    assert [s.name for s in m.services if s.thread == HOT_VACUUM] == ["hot vacuum"]
    assert m.threads == Maintainer.threads_for(settings) == 3


def test_a_worker_told_not_to_vacuum_the_hot_table_has_no_thread_for_it() -> None:
    settings = WorkerSettings(hot_vacuum_dead_rows=None)
    m = Maintainer.for_worker(None, settings, halt=threading.Event())  # type: ignore[arg-type]
    assert "hot vacuum" not in [s.name for s in m.services]
    assert m.threads == Maintainer.threads_for(settings) == 2


def test_a_workers_hot_vacuum_takes_its_threshold_from_the_settings() -> None:
    settings = WorkerSettings(hot_vacuum_dead_rows=5_000)
    m = Maintainer.for_worker(None, settings, halt=threading.Event())  # type: ignore[arg-type]
    [service] = [s for s in m.services if s.name == "hot vacuum"]
    vacuum = service.run_once.__self__  # type: ignore[attr-defined]
    assert isinstance(vacuum, HotVacuum) and vacuum.dead_rows == 5_000


def test_a_workers_retention_sweeps_blobs_with_its_grace_period() -> None:
    settings = WorkerSettings(retention_s=86400.0, blob_grace_s=120.0)
    m = Maintainer.for_worker(None, settings, halt=threading.Event())  # type: ignore[arg-type]
    [retention] = [s for s in m.services if s.name == "retention"]
    pruner = retention.run_once.__self__  # type: ignore[attr-defined]
    assert isinstance(pruner, Pruner) and pruner.blob_grace_s == 120.0
    assert WorkerSettings().blob_grace_s == BLOB_GRACE_S


@pytest.mark.parametrize(("thread", "threads"), [(None, 2), (HOT_VACUUM, 3)])
def test_a_service_apart_that_takes_long_holds_back_no_round_of_the_others(
    thread: str | None, threads: int
) -> None:
    halt, release = threading.Event(), threading.Event()
    quick: list[int] = []

    def quick_service() -> None:
        quick.append(1)
        if len(quick) == 5:
            release.set()

    def long_service() -> None:
        release.wait(30)  # a retention pass over a backlog

    maintainer = Maintainer(
        [
            Service("long", 60, long_service, thread=LONG_ROUNDS),
            # on the maintainer's own thread, or on a third (the hot table's vacuum)
            Service("quick", 0.01, quick_service, thread=thread),
        ],
        halt=halt,
    )
    assert maintainer.threads == threads
    running = threading.Thread(target=maintainer.run, daemon=True)
    running.start()
    assert release.wait(10), "the quick service waited for the long one"
    halt.set()
    running.join(timeout=10)
    assert not running.is_alive()


def test_the_first_round_waits_for_what_it_follows_apart_too() -> None:
    halt, after = threading.Event(), threading.Event()
    ran: list[str] = []
    both = threading.Event()

    def service(name: str) -> Service:
        def run_once() -> None:
            ran.append(name)
            if len(ran) == 2:
                both.set()

        return Service(name, 60, run_once, thread=LONG_ROUNDS if name == "apart" else None)

    maintainer = Maintainer([service("here"), service("apart")], halt=halt, after=after)
    thread = threading.Thread(target=maintainer.run, daemon=True)
    thread.start()
    assert not both.wait(0.3) and ran == [], "a round ran before the worker's first claim"
    after.set()
    assert both.wait(10), ran
    halt.set()
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_a_maintainer_halted_before_what_it_follows_runs_no_round() -> None:
    halt, after = threading.Event(), threading.Event()
    ran: list[int] = []
    maintainer = Maintainer([Service("s", 60, lambda: ran.append(1))], halt=halt, after=after)
    thread = threading.Thread(target=maintainer.run, daemon=True)
    thread.start()
    halt.set()
    after.set()  # the producer's run() sets it as it ends
    thread.join(timeout=10)
    assert not thread.is_alive() and ran == []
