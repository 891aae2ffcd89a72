"""The worker: see worker.py for how its parts fit together."""

from pg_pipeline.worker.worker import Worker

__all__ = ["Worker"]
