"""pg-pipeline: durable, typed job pipelines on the Postgres you already run."""

from pipeline import inputs  # the value checks, for plug-ins' own input too
from pipeline.aio import (
    aenqueue,
    aenqueue_many,
    aenqueue_once,
    alive_workers,
    arun_output,
    arun_progress,
    arun_status,
)
from pipeline.blobs import (
    BlobNotFound,
    BlobStore,
    BlobStoreError,
    BlobStoreUnavailable,
    LocalBlobStore,
    blob_store_from_env,
)

# The command plug-ins' surface lives in pipeline.commands.api; these of its names were exported
# here first, and stay.
from pipeline.commands.api import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CliError, open_db
from pipeline.context import Context
from pipeline.db import connect, database_url
from pipeline.enqueue import JobRequest, enqueue, enqueue_many, enqueue_once
from pipeline.errors import (
    DatabaseUnavailable,
    InvalidPayload,
    LeaseLost,
    PayloadTooLarge,
    PermanentError,
    PipelineError,
    RetryableError,
    SchemaMissing,
    UnknownStage,
)
from pipeline.extras import MissingExtra, needs_extra, require_extra
from pipeline.migrate import migrate
from pipeline.paths import data_dir
from pipeline.runs import (
    RunState,
    StageProgress,
    live_workers,
    run_output,
    run_progress,
    run_status,
)
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
from pipeline.validation import set_max_payload_bytes
from pipeline.worker import Worker

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
    "MissingExtra",
    "PayloadTooLarge",
    "PermanentError",
    "PipelineError",
    "Registry",
    "RetryableError",
    "RunState",
    "Schedule",
    "ScheduleRegistry",
    "SchemaMissing",
    "StageProgress",
    "StageSpec",
    "UnknownStage",
    "Worker",
    "WorkerSettings",
    "aenqueue",
    "aenqueue_many",
    "aenqueue_once",
    "alive_workers",
    "arun_output",
    "arun_progress",
    "arun_status",
    "blob_store_from_env",
    "connect",
    "data_dir",
    "database_url",
    "enqueue",
    "enqueue_many",
    "enqueue_once",
    "inputs",
    "live_workers",
    "migrate",
    "needs_extra",
    "open_db",
    "require_extra",
    "run_output",
    "run_progress",
    "run_status",
    "schedule",
    "set_max_payload_bytes",
    "stage",
    "sync_schedules",
]
