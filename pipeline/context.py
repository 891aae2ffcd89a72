"""What a running stage knows about its job, and how it adds work to the completing transaction."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import psycopg

from pipeline.enqueue import JobRequest, enqueue
from pipeline.errors import LeaseLost
from pipeline.stage import Registry

TransactionStep = Callable[[psycopg.Connection[Any]], None]


class Context:
    """Handed to every stage call. Follow-up jobs and on_complete steps are written in the same
    transaction that marks this job done, after its fence held: all of them commit, or none."""

    def __init__(
        self,
        *,
        job_id: int,
        stage: str,
        attempt: int,
        max_attempts: int,
        tenant_id: str | None,
        parent_id: int | None,
        registry: Registry,
    ) -> None:
        self.job_id = job_id
        self.stage = stage
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.tenant_id = tenant_id
        self.parent_id = parent_id
        #: Set when this run no longer owns the job (lease lost, cancelled, timed out, shutdown).
        #: Long stages should check it between steps; nothing they return will be written.
        self.lost_lease = threading.Event()
        self._registry = registry
        self._steps: list[TransactionStep] = []

    def check_lease(self) -> None:
        """Raise LeaseLost if this run no longer owns the job."""
        if self.lost_lease.is_set():
            raise LeaseLost(f"job {self.job_id} attempt {self.attempt} no longer owns its lease")

    def enqueue(
        self,
        type: str,
        payload: Any,
        *,
        tenant_id: str | int | None = None,
        priority: int | None = None,
        run_after: datetime | timedelta | None = None,
        dedup_key: str | None = None,
    ) -> None:
        """Add a follow-up job, inserted only if this job completes. Validated now, so a bad
        follow-up fails this job instead of surfacing later."""
        request = JobRequest(
            type,
            payload,
            tenant_id=self.tenant_id if tenant_id is None else tenant_id,
            priority=priority,
            run_after=run_after,
            dedup_key=dedup_key,
            parent_id=self.job_id,
        )
        spec = self._registry.get(type)
        validated = spec.validate(payload)

        def insert(conn: psycopg.Connection[Any]) -> None:
            enqueue(
                conn,
                request.type,
                validated,
                tenant_id=request.tenant_id,
                priority=request.priority,
                run_after=request.run_after,
                dedup_key=request.dedup_key,
                parent_id=request.parent_id,
                registry=self._registry,
            )

        self._steps.append(insert)

    def on_complete(self, step: TransactionStep) -> None:
        """Run `step(conn)` inside the completing transaction, after the fence held."""
        self._steps.append(step)

    @property
    def transaction_steps(self) -> list[TransactionStep]:
        return list(self._steps)
