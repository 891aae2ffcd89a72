"""Maintenance services. Each exposes run_once() so tests drive them without a worker; a
worker's Maintainer runs them on its maintenance thread."""

from pg_pipeline.maintenance.blob_sweep import SweepReport, sweep_blobs
from pg_pipeline.maintenance.dead_workers import DeadWorkerPruner
from pg_pipeline.maintenance.hot_vacuum import HotVacuum
from pg_pipeline.maintenance.maintainer import Maintainer, Service
from pg_pipeline.maintenance.partitions import Partitions
from pg_pipeline.maintenance.reclaim import Reclaimer
from pg_pipeline.maintenance.retention import Pruner, PruneReport
from pg_pipeline.maintenance.scheduler import Fired, Scheduler
from pg_pipeline.maintenance.slots import SlotDrift, SlotRepair, SlotRepairReport
from pg_pipeline.maintenance.waits import WaitTimeouts

__all__ = [
    "DeadWorkerPruner",
    "Fired",
    "HotVacuum",
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
    "SweepReport",
    "WaitTimeouts",
    "sweep_blobs",
]
