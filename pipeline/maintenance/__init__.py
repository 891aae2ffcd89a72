"""Maintenance services. Each exposes run_once() so tests drive them without a worker; the
worker runs them on its maintenance thread."""

from pipeline.maintenance.reclaim import Reclaimer, WorkerPruner

__all__ = ["Reclaimer", "WorkerPruner"]
