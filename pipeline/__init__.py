"""pg-pipeline: durable, typed job pipelines on the Postgres you already run."""

from pg_pipeline import inputs  # the value checks, for plug-ins' own input too
from pg_pipeline.admin.usage import UsageLine, run_usage
from pg_pipeline.aio import (
    adiff_outputs,
    aenqueue,
    aenqueue_many,
    aenqueue_once,
    alive_workers,
    aoutput_versions,
    arerun,
    arun_output,
    arun_progress,
    arun_status,
    asignal,
)
from pg_pipeline.apps import AppError, app_settings
from pg_pipeline.blobs import (
    BlobNotFound,
    BlobStore,
    BlobStoreError,
    BlobStoreUnavailable,
    LocalBlobStore,
    blob_store_from_env,
)

# The command plug-ins' surface lives in pg_pipeline.commands.api; these of its names were exported
# here first, and stay.
from pg_pipeline.commands.api import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CliError, open_db
from pg_pipeline.context import Context
from pg_pipeline.db import connect, database_url
from pg_pipeline.enqueue import JobRequest, enqueue, enqueue_many, enqueue_once
from pg_pipeline.errors import (
    DatabaseUnavailable,
    InvalidPayload,
    InvalidSignal,
    InvalidWait,
    LeaseLost,
    NoWaitingStep,
    PayloadTooLarge,
    PermanentError,
    PipelineError,
    RetryableError,
    SchemaMissing,
    UnknownStage,
    Waiting,
    WaitTimedOut,
)
from pg_pipeline.extras import MissingExtra, needs_extra, require_extra
from pg_pipeline.limits import Limit
from pg_pipeline.migrate import migrate
from pg_pipeline.output_versions import (
    NoSuchVersion,
    OutputDiff,
    OutputVersion,
    diff_outputs,
    output_versions,
)
from pg_pipeline.paths import data_dir
from pg_pipeline.reruns import RerunRefused, RerunResult, SameVersion, rerun
from pg_pipeline.runs import (
    RunState,
    StageProgress,
    StoredOutput,
    live_workers,
    run_output,
    run_progress,
    run_status,
    stage_outputs,
)
from pg_pipeline.schedules import (
    SCHEDULES,
    InvalidSchedule,
    Schedule,
    ScheduleRegistry,
    schedule,
    sync_schedules,
)
from pg_pipeline.settings import WorkerSettings
from pg_pipeline.stage import REGISTRY, Registry, StageSpec, stage
from pg_pipeline.validation import set_max_payload_bytes
from pg_pipeline.waits import signal
from pg_pipeline.worker import Worker

__all__ = [
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "REGISTRY",
    "SCHEDULES",
    "AppError",
    "BlobNotFound",
    "BlobStore",
    "BlobStoreError",
    "BlobStoreUnavailable",
    "CliError",
    "Context",
    "DatabaseUnavailable",
    "InvalidPayload",
    "InvalidSchedule",
    "InvalidSignal",
    "InvalidWait",
    "JobRequest",
    "LeaseLost",
    "Limit",
    "LocalBlobStore",
    "MissingExtra",
    "NoSuchVersion",
    "NoWaitingStep",
    "OutputDiff",
    "OutputVersion",
    "PayloadTooLarge",
    "PermanentError",
    "PipelineError",
    "Registry",
    "RerunRefused",
    "RerunResult",
    "RetryableError",
    "RunState",
    "SameVersion",
    "Schedule",
    "ScheduleRegistry",
    "SchemaMissing",
    "StageProgress",
    "StageSpec",
    "StoredOutput",
    "UnknownStage",
    "UsageLine",
    "WaitTimedOut",
    "Waiting",
    "Worker",
    "WorkerSettings",
    "adiff_outputs",
    "aenqueue",
    "aenqueue_many",
    "aenqueue_once",
    "alive_workers",
    "aoutput_versions",
    "app_settings",
    "arerun",
    "arun_output",
    "arun_progress",
    "arun_status",
    "asignal",
    "blob_store_from_env",
    "connect",
    "data_dir",
    "database_url",
    "diff_outputs",
    "enqueue",
    "enqueue_many",
    "enqueue_once",
    "inputs",
    "live_workers",
    "migrate",
    "needs_extra",
    "open_db",
    "output_versions",
    "require_extra",
    "rerun",
    "run_output",
    "run_progress",
    "run_status",
    "run_usage",
    "schedule",
    "set_max_payload_bytes",
    "signal",
    "stage",
    "stage_outputs",
    "sync_schedules",
]
