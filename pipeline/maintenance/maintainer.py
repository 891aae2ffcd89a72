"""The maintainer: runs a worker's maintenance services, each on its own period, on one thread.

Every worker runs one; the services are safe to run side by side (each says why in its module),
so there is no leader to elect. A service that fails (an outage, a refused statement) skips its
round and is tried again at its next one; it never stops the others or the worker.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from pipeline.maintenance.dead_workers import DeadWorkerPruner
from pipeline.maintenance.reclaim import Reclaimer
from pipeline.maintenance.retention import PRUNE_INTERVAL_S, Pruner
from pipeline.maintenance.scheduler import Scheduler
from pipeline.maintenance.slots import SlotRepair
from pipeline.settings import WorkerSettings
from pipeline.stage import REGISTRY

log = logging.getLogger(__name__)

#: Each period is stretched or shrunk by up to this share, drawn anew every round, so that
#: workers started together do not run their services in lockstep.
JITTER = 0.2


@dataclass(frozen=True)
class Service:
    name: str  #: as the log says it
    interval_s: float  #: between the end of one round and the start of the next, before jitter
    run_once: Callable[[], object]


class Maintainer:
    def __init__(
        self,
        services: Sequence[Service],
        *,
        halt: threading.Event,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.services = list(services)
        self._halt = halt
        self._rng = rng or random.Random()
        self._clock = clock
        self._due = [clock()] * len(self.services)  # every service runs on the first round

    @classmethod
    def for_worker(
        cls, pool: ConnectionPool, settings: WorkerSettings, *, halt: threading.Event
    ) -> Maintainer:
        """Reclaim, dead workers' rows, slot repair and the scheduler; retention when the
        settings keep finished runs for a limited time."""
        services = [
            Service("reclaim", settings.reclaim_interval_s, Reclaimer(pool).run_once),
            Service(
                "worker pruning",
                settings.reclaim_interval_s,
                DeadWorkerPruner(pool, settings.worker_prune_after_s).run_once,
            ),
            Service("slot repair", settings.slot_repair_interval_s, SlotRepair(pool).run_once),
            # Every stage the code knows, not only those this worker runs: a schedule fires a
            # job for any stage, and the worker that runs it may be another one.
            Service("scheduler", settings.schedule_interval_s, Scheduler(pool, REGISTRY).run_once),
        ]
        if settings.retention_s is not None:
            pruner = Pruner(pool, older_than_s=settings.retention_s)
            services.append(Service("retention", PRUNE_INTERVAL_S, pruner.run_once))
        return cls(services, halt=halt)

    def run(self) -> None:
        """The maintenance thread: rounds until halt is set."""
        while not self._halt.is_set():
            if self._halt.wait(self.run_due()):
                return

    def run_due(self) -> float | None:
        """Run every service whose round is due; seconds until the next one is (None: there
        are no services)."""
        for i, service in enumerate(self.services):
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
