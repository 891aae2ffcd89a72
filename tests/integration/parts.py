"""The worker's parts wired as the Worker wires them, for tests that drive one part directly
against a real database (no Worker, no threads but the runners the test asks for)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pg_pipeline import REGISTRY, enqueue
from pg_pipeline.store import ClaimedJob, JobStore, WorkerInfo
from pg_pipeline.worker.completer import Completer, Settled
from pg_pipeline.worker.heartbeat import Heartbeat
from pg_pipeline.worker.inflight import InFlightTable
from pg_pipeline.worker.isolated import IsolatedRunner
from pg_pipeline.worker.job_executor import JobExecutor
from pg_pipeline.worker.outputs import Outputs
from pg_pipeline.worker.prefetch import Prefetch
from pg_pipeline.worker.runners import Runners
from pg_pipeline.worker.timeouts import Timeouts
from pg_pipeline.worker.versions import StageVersions

Conn = psycopg.Connection[Any]
WORKER = WorkerInfo(
    uuid.UUID(int=1),
    sorted(REGISTRY.names()),
    2,
    {s.name: s.version for s in REGISTRY.select(None)},
)
SLOTS = 2


class Heard:
    """A completer subscriber that remembers what it was told."""

    def __init__(self) -> None:
        self.heard: list[tuple[int, Settled]] = []

    def settled(self, job: ClaimedJob, settled: Settled) -> None:
        self.heard.append((job.id, settled))


class Parts:
    def __init__(self, db_url: str, pool: ConnectionPool, runner_threads: int) -> None:
        self.halt = threading.Event()
        self.store = JobStore(pool)
        self.table = InFlightTable(SLOTS, threading.Event())
        self.completer = Completer(self.store, halt=self.halt, retry_max_s=0.5, batch_max=10)
        self.heard = Heard()
        self.completer.subscribe(self.table)
        self.completer.subscribe(self.heard)
        self.runners = Runners(count=runner_threads, max_abandoned=4, on_too_many=print)
        self.isolated = IsolatedRunner(db_url, {})
        self.executor = JobExecutor(
            registry=REGISTRY,
            table=self.table,
            heartbeat=Heartbeat(self.store, WORKER, self.table, interval_s=60, halt=self.halt),
            runners=self.runners,
            isolated=self.isolated,
            outputs=Outputs(pool, halt=self.halt, retry_max_s=0.5),
            prefetch=Prefetch(SLOTS, 0, 0),
            completer=self.completer,
            versions=StageVersions(self.store, WORKER),
        )
        self.timeouts = Timeouts(self.table, self.runners, self.completer, halt=self.halt)

    def claim(self, conn: Conn, stage: str, payload: dict[str, Any]) -> ClaimedJob:
        enqueue(conn, stage, payload)
        [job] = self.store.claim([stage], 1, WORKER.id)
        return job

    def stop(self) -> None:
        self.halt.set()
        self.timeouts.stop()
        self.runners.stop()
        self.isolated.close()  # its fork server, shared by every Isolator of this process


@contextmanager
def worker_parts(db_url: str, pool: ConnectionPool, *, runner_threads: int) -> Iterator[Parts]:
    """With runner_threads=0, a dispatched job is never taken: the test plays the runner."""
    parts = Parts(db_url, pool, runner_threads)
    parts.runners.start(parts.executor)
    try:
        yield parts
    finally:
        parts.stop()


def job_row(
    conn: Conn, job_id: int, columns: str = "status, attempts, last_error"
) -> tuple[Any, ...]:
    """The job's `columns`; () for no such job."""
    found = conn.execute(f"SELECT {columns} FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone()
    return tuple(found or ())
