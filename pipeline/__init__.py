"""pg-pipeline: durable, typed job pipelines on the Postgres you already run."""

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
from pipeline.settings import WorkerSettings
from pipeline.stage import REGISTRY, Registry, StageSpec, stage
from pipeline.worker import Worker

__all__ = [
    "REGISTRY",
    "Context",
    "DatabaseUnavailable",
    "InvalidPayload",
    "JobRequest",
    "LeaseLost",
    "PermanentError",
    "PipelineError",
    "Registry",
    "RetryableError",
    "StageSpec",
    "UnknownStage",
    "Worker",
    "WorkerSettings",
    "connect",
    "database_url",
    "enqueue",
    "enqueue_many",
    "enqueue_once",
    "migrate",
    "stage",
]
