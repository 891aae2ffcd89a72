"""Maintenance services. Each exposes run_once() so tests drive them without a worker; a
worker's Maintainer runs them on its maintenance thread."""

from pipeline.maintenance.dead_workers import DeadWorkerPruner
from pipeline.maintenance.maintainer import Maintainer, Service
from pipeline.maintenance.partitions import Partitions
from pipeline.maintenance.reclaim import Reclaimer
from pipeline.maintenance.retention import Pruner, PruneReport
from pipeline.maintenance.scheduler import Fired, Scheduler
from pipeline.maintenance.slots import SlotDrift, SlotRepair, SlotRepairReport

__all__ = [
    "DeadWorkerPruner",
    "Fired",
    "Maintainer",
    "Partitions",
    "PruneReport",
    "Pruner",
    "Reclaimer",
    "Scheduler",
    "Service",
    "SlotDrift",
    "SlotRepair",
    "SlotRepairReport",
]
