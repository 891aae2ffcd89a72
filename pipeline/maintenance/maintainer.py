"""The maintainer: runs a worker's maintenance services, each on its own period.

Every worker runs one; the services are safe to run side by side (each says why in its module),
so there is no leader to elect. A service that fails (an outage, a refused statement) skips its
round and is tried again at its next one; it never stops the others or the worker.

The quick services (reclaim, the scheduler's tick) share the maintenance thread. The services
whose round can take long (a retention pass over a backlog of old runs takes minutes, and so
does the first slot repair after an upgrade, over every counter row ever made) share a second
one: on the first they would hold every other service's round back until they ended, a
schedule's fire times and the reclaim of a dead worker's jobs with them. The hot table's vacuum
has a third: its VACUUM takes 10-100 ms on a table kept small, but 1-2.6 s on one that a minute
without it bloated (3-6 M dead rows), too long to keep the scheduler's one-second tick waiting;
and it matters most while a retention pass runs, which it must not wait for.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from psycopg_pool import ConnectionPool

from pg_pipeline.maintenance.dead_workers import DeadWorkerPruner
from pg_pipeline.maintenance.hot_vacuum import HOT_VACUUM_INTERVAL_S, HotVacuum
from pg_pipeline.maintenance.partitions import PARTITIONS_INTERVAL_S, Partitions
from pg_pipeline.maintenance.reclaim import Reclaimer
from pg_pipeline.maintenance.retention import PRUNE_INTERVAL_S, Pruner
from pg_pipeline.maintenance.scheduler import Scheduler
from pg_pipeline.maintenance.slots import SlotRepair
from pg_pipeline.maintenance.waits import WAIT_TIMEOUT_INTERVAL_S, WaitTimeouts
from pg_pipeline.settings import WorkerSettings
from pg_pipeline.stage import REGISTRY

log = logging.getLogger(__name__)

#: Each period is stretched or shrunk by up to this share, drawn anew every round, so that
#: workers started together do not run their services in lockstep.
JITTER = 0.2
#: Seconds a stopping maintainer waits for the services apart to end their rounds (a retention
#: pass or a slot repair stops after the batch it is in, a short transaction; a vacuum of the
#: hot table takes up to seconds), all threads together.
JOIN_APART_S = 5.0
#: Seconds the first round waits at most for what it is to follow (`after`: the worker's first
#: claim), should that hang: reclaim must not wait on it for long.
AFTER_WAIT_MAX_S = 10.0


#: The thread of the services whose round may take longer than the others' periods.
LONG_ROUNDS = "long rounds"
#: The hot table's vacuum's thread (hot_vacuum.py).
HOT_VACUUM = "hot vacuum"


@dataclass(frozen=True)
class Service:
    name: str  #: as the log says it
    interval_s: float  #: between the end of one round and the start of the next, before jitter
    run_once: Callable[[], object]
    #: the thread apart it runs on, shared by the services that name it (LONG_ROUNDS,
    #: HOT_VACUUM); None: the maintainer's own, for quick rounds
    thread: str | None = None


class Maintainer:
    def __init__(
        self,
        services: Sequence[Service],
        *,
        halt: threading.Event,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        after: threading.Event | None = None,
    ) -> None:
        self.services = list(services)
        self._halt = halt
        #: run()'s first round, apart or not, waits for this (up to AFTER_WAIT_MAX_S)
        self._after = after
        self._rng = rng or random.Random()
        self._clock = clock
        self._here = [s for s in self.services if s.thread is None]  # on the thread of run()
        self._apart: dict[str, list[Service]] = {}  # by the thread apart they share
        for s in self.services:
            if s.thread is not None:
                self._apart.setdefault(s.thread, []).append(replace(s, thread=None))
        self._due = [clock()] * len(self._here)  # every service runs on the first round

    @classmethod
    def for_worker(
        cls,
        pool: ConnectionPool,
        settings: WorkerSettings,
        *,
        halt: threading.Event,
        after: threading.Event | None = None,
    ) -> Maintainer:
        """Reclaim, dead workers' rows, slot repair, the scheduler, the history's partitions and
        wait timeouts; retention when the settings keep finished runs for a limited time; the
        hot table's vacuum unless the settings turn it off. The first round waits for `after`
        (the worker's first claim)."""
        services = [
            Service("reclaim", settings.reclaim_interval_s, Reclaimer(pool).run_once),
            Service(
                "worker pruning",
                settings.reclaim_interval_s,
                DeadWorkerPruner(pool, settings.worker_prune_after_s).run_once,
            ),
            # Passes end between two batches once the worker stops, not minutes later.
            Service(
                "slot repair",
                settings.slot_repair_interval_s,
                SlotRepair(pool, stop=halt.is_set).run_once,
                thread=LONG_ROUNDS,
            ),
            # Every stage the code knows, not only those this worker runs: a schedule fires a
            # job for any stage, and the worker that runs it may be another one.
            Service("scheduler", settings.schedule_interval_s, Scheduler(pool, REGISTRY).run_once),
            Service("history partitions", PARTITIONS_INTERVAL_S, Partitions(pool).run_once),
            Service("wait timeouts", WAIT_TIMEOUT_INTERVAL_S, WaitTimeouts(pool).run_once),
        ]
        if settings.retention_s is not None:
            pruner = Pruner(
                pool,
                older_than_s=settings.retention_s,
                stop=halt.is_set,
                sleep=halt.wait,
                blob_grace_s=settings.blob_grace_s,
            )
            services.append(
                Service("retention", PRUNE_INTERVAL_S, pruner.run_once, thread=LONG_ROUNDS)
            )
        if settings.hot_vacuum_dead_rows is not None:
            vacuum = HotVacuum(pool, dead_rows=settings.hot_vacuum_dead_rows)
            services.append(
                Service("hot vacuum", HOT_VACUUM_INTERVAL_S, vacuum.run_once, thread=HOT_VACUUM)
            )
        return cls(services, halt=halt, after=after)

    @property
    def threads(self) -> int:
        """Threads run() keeps busy (each may hold a database connection)."""
        return 1 + len(self._apart)

    @staticmethod
    def threads_for(settings: WorkerSettings) -> int:
        """The threads of for_worker(settings)'s maintainer, before there is a pool to make it
        with: the worker sizes its pool by them. The slot repair is always apart; the hot
        table's vacuum is, unless turned off."""
        return 2 + (settings.hot_vacuum_dead_rows is not None)

    def run(self) -> None:
        """The maintenance thread: rounds until halt is set, with the services apart on their
        threads, ended with it. A worker's first round waits for its first claim: begun
        at the worker's start, its statements in new connections (reclaim 7-9 ms, the rollups'
        retention and fold 1-3 ms each, some milliseconds more with 100 M finished jobs than
        with none) and its Python ran beside the first claim, 5-7 ms of statements (up to 23)
        finished before the claim began. Nothing in the round is needed first: a job reclaimed
        meanwhile is announced, a missing day's partition is made by the write that needs it."""
        if self._after is not None:
            self._after.wait(AFTER_WAIT_MAX_S)
        if self._halt.is_set():
            return
        apart = [
            threading.Thread(
                target=Maintainer(
                    services,
                    halt=self._halt,
                    rng=random.Random(self._rng.random()),
                    clock=self._clock,
                ).run,
                name=f"{threading.current_thread().name} ({name})",
                daemon=True,
            )
            for name, services in self._apart.items()
        ]
        for thread in apart:
            thread.start()
        try:
            while not self._halt.is_set():
                if self._halt.wait(self.run_due()):
                    return
        finally:
            deadline = time.monotonic() + JOIN_APART_S
            for thread in apart:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def run_due(self) -> float | None:
        """Run every service of this thread whose round is due; seconds until the next one is
        (None: there are no services)."""
        for i, service in enumerate(self._here):
            if self._clock() < self._due[i]:
                continue
            try:
                service.run_once()
            except Exception as exc:  # an outage, or a refused statement: try next round
                log.warning("%s skipped (%s)", service.name, exc)
            stretch = self._rng.uniform(1 - JITTER, 1 + JITTER)
            self._due[i] = self._clock() + service.interval_s * stretch
        if not self._due:
            return None
        return max(0.0, min(self._due) - self._clock())
