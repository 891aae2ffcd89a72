"""A job whose payload this worker's model of the stage rejects: fail it, or leave it to a worker
that runs another version of the stage.

In a rolling deploy, old and new workers run side by side: a job enqueued by new code may carry
a payload only the new model accepts, and a job queued before the deploy one only the old model
accepts. Each worker advertises a version of each stage's input model (StageSpec.version, in
pipeline.workers.stage_versions). A worker whose model rejects a payload gives the job back,
uncharged, while a live worker advertises another version of the stage (it may accept it), for
up to LEAVE_FOR_OTHERS_S from when this worker first rejected the job; then, or when every live
worker runs this version, the job fails with the validation error, as it always did.

A job of a stage this worker does not know never gets here: the claim takes only the worker's
own stages.
"""

from __future__ import annotations

import logging
import threading
import time

import psycopg

from pg_pipeline.errors import DatabaseUnavailable
from pg_pipeline.outcomes import LEFT_DELAY_S, Unfit
from pg_pipeline.store import ClaimedJob, JobStore, WorkerInfo

log = logging.getLogger(__name__)

#: Seconds from when this worker first rejected a job's payload that it keeps leaving the job to
#: a worker running another version of the stage: longer than a rolling deploy takes to bring
#: the new workers up, short enough that a payload no worker accepts fails within minutes. The
#: scheduler leaves a schedule it cannot fire for as long.
LEAVE_FOR_OTHERS_S = 300.0
#: A worker whose last heartbeat is older than this is not counted on to take the job.
ALIVE_S = 180.0


class StageVersions:
    def __init__(
        self,
        store: JobStore,
        worker: WorkerInfo,
        *,
        leave_for_others_s: float = LEAVE_FOR_OTHERS_S,
        alive_s: float = ALIVE_S,
    ) -> None:
        self.store = store
        self.worker = worker
        self.leave_for_others_s = leave_for_others_s
        self.alive_s = alive_s
        self._lock = threading.Lock()
        #: job id -> when (monotonic) this worker first rejected its payload
        self._first_rejected: dict[int, float] = {}

    def judge(self, job: ClaimedJob, unfit: Unfit) -> Unfit:
        """`unfit` as it is (the job fails), or with why it is left to another worker."""
        now = time.monotonic()
        with self._lock:
            first = self._first_rejected.setdefault(job.id, now)
            if first == now:
                self._forget_before(now - 2 * self.leave_for_others_s)
        if now - first >= self.leave_for_others_s:
            with self._lock:
                self._first_rejected.pop(job.id, None)
            return Unfit(
                f"{unfit.reason} (no worker running another version of stage {job.type!r} took "
                f"it within {self.leave_for_others_s:g} s)"
            )
        try:
            elsewhere = self.store.other_stage_version_alive(
                self.worker, job.type, alive_s=self.alive_s
            )
        except (psycopg.Error, DatabaseUnavailable) as exc:
            # Unknown for now. Failing the job could not be undone; leaving it can, and the
            # time it is left is bounded all the same.
            log.warning("job %s: cannot read the workers' stage versions: %s", job.id, exc)
            elsewhere = True
        if not elsewhere:
            with self._lock:
                self._first_rejected.pop(job.id, None)
            return unfit
        if first == now:
            log.warning(
                "job %s (%s): this worker's version of the stage rejects its payload; left to a "
                "worker running another version for up to %g s: %s",
                job.id,
                job.type,
                self.leave_for_others_s,
                unfit.reason,
            )
        return Unfit(
            unfit.reason,
            left=f"left for a worker running another version of stage {job.type!r} (back in "
            f"{LEFT_DELAY_S:g} s, for up to {self.leave_for_others_s:g} s): {unfit.reason}",
        )

    def _forget_before(self, moment: float) -> None:
        """Drop jobs first rejected before `moment`: another worker took them long ago."""
        for job_id in [j for j, first in self._first_rejected.items() if first < moment]:
            del self._first_rejected[job_id]
