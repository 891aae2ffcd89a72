"""pg-pipeline: durable, typed job pipelines on the Postgres you already run."""

from typing import TYPE_CHECKING, Any

from pipeline.blobs import (
    BlobNotFound,
    BlobStore,
    BlobStoreError,
    BlobStoreUnavailable,
    LocalBlobStore,
    blob_store_from_env,
)
from pipeline.context import Context
from pipeline.db import connect, database_url
from pipeline.enqueue import JobRequest, enqueue, enqueue_many, enqueue_once
from pipeline.errors import (
    DatabaseUnavailable,
    InvalidPayload,
    LeaseLost,
    PermanentError,
    PipelineError,
    RetryableError,
    UnknownStage,
)
from pipeline.migrate import migrate
from pipeline.paths import data_dir
from pipeline.runs import StageProgress, live_workers, run_output, run_progress
from pipeline.schedules import (
    SCHEDULES,
    InvalidSchedule,
    Schedule,
    ScheduleRegistry,
    schedule,
    sync_schedules,
)
from pipeline.settings import WorkerSettings
from pipeline.stage import REGISTRY, Registry, StageSpec, stage
from pipeline.worker import Worker

# The plug-in surface for packages that add commands (the `pipeline.commands` entry points) is
# imported from pipeline.cli on first use, not here. `python -m pipeline.cli` (how `submit` starts
# a local worker) imports this package before it runs pipeline.cli as __main__: had the package
# imported pipeline.cli already, runpy would warn and the process would hold two copies of it.
# Lazy, it also keeps argparse out of `import pipeline`. Type checkers see plain imports (and no
# catch-all __getattr__ that would hide a misspelt name).
if TYPE_CHECKING:
    from pipeline.cli import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CliError, open_db
else:
    _FROM_CLI = frozenset({"EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "CliError", "open_db"})

    def __getattr__(name: str) -> Any:
        if name not in _FROM_CLI:
            raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module("pipeline.cli"), name)
        globals()[name] = value
        return value


__all__ = [
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "REGISTRY",
    "SCHEDULES",
    "BlobNotFound",
    "BlobStore",
    "BlobStoreError",
    "BlobStoreUnavailable",
    "CliError",
    "Context",
    "DatabaseUnavailable",
    "InvalidPayload",
    "InvalidSchedule",
    "JobRequest",
    "LeaseLost",
    "LocalBlobStore",
    "PermanentError",
    "PipelineError",
    "Registry",
    "RetryableError",
    "Schedule",
    "ScheduleRegistry",
    "StageProgress",
    "StageSpec",
    "UnknownStage",
    "Worker",
    "WorkerSettings",
    "blob_store_from_env",
    "connect",
    "data_dir",
    "database_url",
    "enqueue",
    "enqueue_many",
    "enqueue_once",
    "live_workers",
    "migrate",
    "open_db",
    "run_output",
    "run_progress",
    "schedule",
    "stage",
    "sync_schedules",
]
