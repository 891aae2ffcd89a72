"""Maintenance services. Each exposes run_once() so tests drive them without a worker; the
worker runs them on its maintenance thread."""

from pipeline.maintenance.dead_workers import DeadWorkerPruner
from pipeline.maintenance.reclaim import Reclaimer
from pipeline.maintenance.retention import Pruner, PruneReport
from pipeline.maintenance.scheduler import Fired, Scheduler
from pipeline.maintenance.slots import SlotDrift, SlotRepair

__all__ = [
    "DeadWorkerPruner",
    "Fired",
    "PruneReport",
    "Pruner",
    "Reclaimer",
    "Scheduler",
    "SlotDrift",
    "SlotRepair",
]
