"""pg-pipeline: durable, typed job pipelines on the Postgres you already run.

Each name below is imported when it is first used (PEP 562), not when the package is: a program
that imports one module of the package (`pipeline status` imports its command alone) does not
pay for the worker, pydantic's models and jsonschema that it never runs. mypy reads the imports
under TYPE_CHECKING; `_EXPORTS` says the same at run time (tests/unit/test_import_boundaries.py
holds the two and __all__ equal).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

    # The command plug-ins' surface lives in pg_pipeline.commands.api; these of its names were
    # exported here first, and stay.
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

#: Each module of the package and the names it exports here; `inputs`, a module, is the fourth
#: kind of export: a submodule, which __getattr__ imports.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "admin.usage": ("UsageLine", "run_usage"),
    "aio": (
        "adiff_outputs",
        "aenqueue",
        "aenqueue_many",
        "aenqueue_once",
        "alive_workers",
        "aoutput_versions",
        "arerun",
        "arun_output",
        "arun_progress",
        "arun_status",
        "asignal",
    ),
    "apps": ("AppError", "app_settings"),
    "blobs": (
        "BlobNotFound",
        "BlobStore",
        "BlobStoreError",
        "BlobStoreUnavailable",
        "LocalBlobStore",
        "blob_store_from_env",
    ),
    "commands.api": ("EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "CliError", "open_db"),
    "context": ("Context",),
    "db": ("connect", "database_url"),
    "enqueue": ("JobRequest", "enqueue", "enqueue_many", "enqueue_once"),
    "errors": (
        "DatabaseUnavailable",
        "InvalidPayload",
        "InvalidSignal",
        "InvalidWait",
        "LeaseLost",
        "NoWaitingStep",
        "PayloadTooLarge",
        "PermanentError",
        "PipelineError",
        "RetryableError",
        "SchemaMissing",
        "UnknownStage",
        "Waiting",
        "WaitTimedOut",
    ),
    "extras": ("MissingExtra", "needs_extra", "require_extra"),
    "limits": ("Limit",),
    "migrate": ("migrate",),
    "output_versions": (
        "NoSuchVersion",
        "OutputDiff",
        "OutputVersion",
        "diff_outputs",
        "output_versions",
    ),
    "paths": ("data_dir",),
    "reruns": ("RerunRefused", "RerunResult", "SameVersion", "rerun"),
    "runs": (
        "RunState",
        "StageProgress",
        "StoredOutput",
        "live_workers",
        "run_output",
        "run_progress",
        "run_status",
        "stage_outputs",
    ),
    "schedules": (
        "SCHEDULES",
        "InvalidSchedule",
        "Schedule",
        "ScheduleRegistry",
        "schedule",
        "sync_schedules",
    ),
    "settings": ("WorkerSettings",),
    "stage": ("REGISTRY", "Registry", "StageSpec", "stage"),
    "validation": ("set_max_payload_bytes",),
    "waits": ("signal",),
    "worker": ("Worker",),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

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


def __getattr__(name: str) -> Any:
    """An exported name, imported on its first use and kept; else a submodule (`pg_pipeline.db`
    after `import pg_pipeline` alone reached every submodule when the package imported them all)."""
    module = _MODULE_OF.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    elif not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    setattr(sys.modules[__name__], name, value)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """The package, which keeps an export over the submodule of the same name (`migrate`,
    `enqueue`, `stage`, `output_versions`): importing a submodule binds it on its package, and
    `from pg_pipeline import migrate` must still give the function, as it did when this module
    imported every export up front."""

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, types.ModuleType) and name in _MODULE_OF:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
