"""The worker's side of the database: claim, heartbeat, settle, release, reclaim.

Every statement after a claim is fenced by (id, attempts, status = 'running'); the methods
return what the database confirmed, and the caller treats anything missing as a lost lease.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pipeline.errors import LeaseLost
from pipeline.queries import Q


@dataclass(frozen=True)
class ClaimedJob:
    id: int
    type: str
    tenant_id: str | None
    payload: Any
    priority: int
    attempts: int
    max_attempts: int
    lease_seconds: int
    parent_id: int | None
    root_id: int  # the run: the root job's id, this job's own for a root

    @property
    def fence(self) -> tuple[int, int]:
        return (self.id, self.attempts)


def _fence_params(jobs: Iterable[tuple[int, int]]) -> dict[str, list[int]]:
    pairs = list(jobs)
    return {"ids": [p[0] for p in pairs], "attempts": [p[1] for p in pairs]}


class JobStore:
    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def claim(self, types: Sequence[str], limit: int, worker_id: uuid.UUID) -> list[ClaimedJob]:
        with self.pool.connection() as conn:
            rows = conn.execute(
                Q["claim"], {"types": list(types), "limit": limit, "worker_id": worker_id}
            ).fetchall()
        return [ClaimedJob(*row) for row in rows]

    def heartbeat(self, worker_id: uuid.UUID, held: Iterable[tuple[int, int]]) -> set[int]:
        """Extend the leases still owned; returns their ids."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                Q["heartbeat"], {"worker_id": worker_id, **_fence_params(held)}
            ).fetchall()
        return {row[0] for row in rows}

    def complete(self, done: Iterable[tuple[int, int]]) -> set[int]:
        with self.pool.connection() as conn:
            rows = conn.execute(Q["complete"], _fence_params(done)).fetchall()
        return {row[0] for row in rows}

    def complete_with(self, job: ClaimedJob, steps: Sequence[Any]) -> None:
        """Mark done and run the job's transaction steps in one transaction, fence first.
        Raises LeaseLost, rolling everything back, when the fence does not hold."""
        with self.pool.connection() as conn, conn.transaction():
            confirmed = conn.execute(Q["complete"], _fence_params([job.fence])).fetchall()
            if not confirmed:
                raise LeaseLost(f"job {job.id} attempt {job.attempts}: lease lost before commit")
            for step in steps:
                step(conn)

    def fail(
        self, job: ClaimedJob, error: str, *, permanent: bool, delay_s: float
    ) -> tuple[str, datetime] | None:
        """Requeue after delay_s, or fail for good; None when the fence did not hold."""
        with self.pool.connection() as conn:
            row = conn.execute(
                Q["fail"],
                {
                    "id": job.id,
                    "attempts": job.attempts,
                    "permanent": permanent,
                    "delay_s": delay_s,
                    "error": error,
                },
            ).fetchone()
        return None if row is None else (row[0], row[1])

    def release(self, held: Iterable[tuple[int, int]]) -> set[int]:
        with self.pool.connection() as conn:
            rows = conn.execute(Q["release"], _fence_params(held)).fetchall()
        return {row[0] for row in rows}

    def register_worker(self, worker_id: uuid.UUID, stages: list[str], concurrency: int) -> None:
        with self.pool.connection() as conn:
            conn.execute(
                Q["register_worker"],
                {
                    "id": worker_id,
                    "hostname": socket.gethostname(),
                    "pid": os.getpid(),
                    "stages": stages,
                    "concurrency": concurrency,
                },
            )

    def unregister_worker(self, worker_id: uuid.UUID) -> None:
        with self.pool.connection() as conn:
            conn.execute(Q["unregister_worker"], {"id": worker_id})


def reclaim_expired(conn: psycopg.Connection[Any], limit: int = 1000) -> list[tuple[int, str, str]]:
    """Expired leases back to queued while attempts remain, else failed: (id, type, status)."""
    rows = conn.execute(Q["reclaim_expired"], {"limit": limit}).fetchall()
    return [(row[0], row[1], row[2]) for row in rows]
