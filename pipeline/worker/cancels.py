"""Cancel notifications are hints: NOTIFY takes no privilege, so anyone who can connect may send
`pipeline_cancel` with a running job's "id:claims" (ids are sequential, claims small). A worker
abandons a job only once its row says it is cancelled for that very claim.

A hint for a claim this worker does not hold costs nothing; the hints for held claims that
arrived together (the listener batches them, and spaces the batches) cost one read by id
(sql/queries.sql, cancelled_claims). A hint the row does not bear out is ignored, and said once
in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

import psycopg

from pg_pipeline.db import outage
from pg_pipeline.store import JobStore
from pg_pipeline.worker.inflight import InFlightTable

log = logging.getLogger(__name__)


class Cancellable(Protocol):
    def cancel(self, job_id: int, claim: int) -> None:
        """The job's row says this claim was cancelled: stop it (JobExecutor.cancel)."""


class CancelChecks:
    def __init__(self, store: JobStore, table: InFlightTable, executor: Cancellable) -> None:
        self.store = store
        self.table = table
        self.executor = executor
        self.forged = 0  #: hints for held claims whose row was not cancelled
        self._warned = False

    def check(self, hints: Iterable[tuple[int, int]]) -> None:
        """Cancel the held claims among `hints` whose row is cancelled; never raises for an
        outage (the heartbeat finds a cancelled job all the same: it is no longer running)."""
        held = []
        for job_id, claim in dict.fromkeys(hints):
            entry = self.table.get(job_id)
            if entry is not None and entry.job.claim == claim and not entry.abandoned:
                held.append((job_id, claim))
        if not held:
            return
        try:
            confirmed = self.store.cancelled(held)
        except psycopg.Error as exc:
            if not outage(exc):
                raise
            log.warning(
                "could not check %d cancel notification(s), database unavailable (%s); the "
                "heartbeat will find the jobs that were cancelled",
                len(held),
                exc,
            )
            return
        # Counted before the real ones are acted on: once a job of this batch has stopped, the
        # hints that came with it are all dealt with, forged ones included.
        unfounded = len(held) - len(confirmed)
        if unfounded:
            self.forged += unfounded
            if not self._warned:
                self._warned = True
                log.warning(
                    "ignoring a cancel notification for job %s, which is not cancelled: "
                    "pg-pipeline did not send it (further ones are ignored silently)",
                    next(job_id for job_id, _ in held if job_id not in confirmed),
                )
        for job_id, claim in held:
            if job_id in confirmed:
                self.executor.cancel(job_id, claim)
