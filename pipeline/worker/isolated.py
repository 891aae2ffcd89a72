"""A job run alone in a child process: a crash there is the job's own, and a timeout or a
cancel kills the child instead of abandoning a thread.

The child (run_alone) does what a runner thread does (run, decide, complete) with its own
connection, so outputs, follow-ups and on_complete steps commit in the child's fenced
transaction; the parent (IsolatedRunner, on a runner thread) keeps the lease alive meanwhile.
If the child dies, the parent charges the job for the crash.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from pg_pipeline.context import Context
from pg_pipeline.db import make_pool
from pg_pipeline.executor import run_job, validated
from pg_pipeline.logs import LogSetup, configure, current_setup, running
from pg_pipeline.outcomes import (
    NOT_RUN_DELAY_S,
    Crashed,
    Lost,
    NotRun,
    Raised,
    RunResult,
    TimedOut,
    Unfit,
    decide,
)
from pg_pipeline.runs import job_output, run_outputs
from pg_pipeline.stage import REGISTRY, StageSpec
from pg_pipeline.store import ClaimedJob, JobStore
from pg_pipeline.tracing import carried, under
from pg_pipeline.waits import WaitRecord, read_wait
from pg_pipeline.worker.completer import Completer, Settled
from pg_pipeline.worker.inflight import InFlight

log = logging.getLogger(__name__)

CHILD_RETRY_MAX_S = 2.0  #: longest wait between reconnects inside the child


def run_alone(
    dsn: str, module: str, stage_name: str, job: ClaimedJob, logs: LogSetup | None = None
) -> Settled:
    """The child's entry point (by reference, through the fork server): returns what the
    database confirmed for the job. `logs`: the worker's log setup, which the child (whose
    logging starts unconfigured) takes on, so its lines, the stage's and the settlement's,
    look like the worker's and carry the job."""
    if logs is not None:
        configure(logs)
    with running(job), under(job.traceparent):
        return _run_alone(dsn, module, stage_name, job)


def _run_alone(dsn: str, module: str, stage_name: str, job: ClaimedJob) -> Settled:
    importlib.import_module(module)
    spec = REGISTRY.get(stage_name)
    pool = make_pool(dsn, max_size=2, name="pg-pipeline isolated job")
    try:

        def read_outputs(
            root_id: int, stage: str, generation: int | None, version: str | None
        ) -> list[tuple[int | None, Any]]:
            with pool.connection() as conn:
                return run_outputs(conn, root_id, stage, generation, version)

        def read_job_output(job_id: int) -> Any:
            with pool.connection() as conn:
                return job_output(conn, job_id)

        def read_job_wait(job_id: int, name: str) -> WaitRecord | None:
            with pool.connection() as conn:
                return read_wait(conn, job_id, name)

        ctx = Context.for_job(job, REGISTRY, read_outputs, read_job_wait)
        outcome = run_job(spec, job, ctx, read_job_output)
        store = JobStore(pool)
        if spec.limits:
            store.correct_after_run(job, spec, ctx.usage_counters())
        # No subscribers: the parent publishes what this returns.
        completer = Completer(
            store, halt=threading.Event(), retry_max_s=CHILD_RETRY_MAX_S, batch_max=1
        )
        transition = decide(spec, job, outcome)
        until = time.monotonic() + job.lease_seconds
        return completer.apply_now(job, transition, until=until, usage=ctx.usage_record)
    finally:
        pool.close()


class IsolatedRunner:
    """The parent's side: which jobs run alone, and running one. The Isolator (a fork server
    that preloads the stages' modules) starts with the first such job."""

    def __init__(self, dsn: str, specs: Mapping[str, StageSpec]) -> None:
        # A stage that must run alone and that no child can import would otherwise have to run
        # in a thread, or never: refuse to start instead.
        for spec in specs.values():
            if spec.isolation == "process" and not _child_can_run(spec):
                raise ValueError(
                    f"stage {spec.name!r} has isolation='process', so a child process must be "
                    "able to import it: define it in a module, registered in pipeline's default "
                    "registry, not in the worker's script"
                )
        self.dsn = dsn
        self.specs = specs
        self._isolator: Any = None
        self._lock = threading.Lock()

    def wanted(self, spec: StageSpec, job: ClaimedJob) -> bool:
        """A stage that asks for it, or a job suspected of crashing its last worker."""
        if spec.isolation == "process":
            return True  # __init__ made sure a child can run it
        if not job.suspect:
            return False
        if not _child_can_run(spec):
            # Running it alone is impossible, and never running it is worse: a thread it is.
            log.warning(
                "job %s is a crash suspect, but its stage %s is defined where no child process "
                "can import it: it runs in a thread",
                job.id,
                spec.name,
            )
            return False
        return True

    def run(self, entry: InFlight) -> RunResult | Settled:
        """Run the job in a child: what the child settled, or, when the child did not get to
        settle it, what happened to the run (the caller decides and settles that)."""
        from pg_pipeline.isolation import IsolationError

        spec, job = entry.spec, entry.job
        unfit = validated(spec, job)
        if isinstance(unfit, Unfit):
            return unfit  # the parent judges whether to leave it to another worker
        log.info("job %s (%s) runs alone in a child process", job.id, job.type)
        try:
            result = self._isolator_for().run(
                run_alone,
                # The job's span (current here when the worker traces) is the parent of what
                # the child enqueues, as in a thread.
                (self.dsn, spec.fn.__module__, spec.name, carried(job), current_setup()),
                timeout_s=spec.timeout_s,
                stop=entry.ctx.lost_lease,
            )
        except IsolationError as exc:
            # The machinery failed, not the job. Not in a thread instead: a crash there would
            # take the worker and every job in it, which is what running alone prevents.
            log.error(
                "job %s (%s) must run alone and no child process could run it (%s); back to "
                "the queue in %g s, uncharged, until one can",
                job.id,
                job.type,
                exc,
                NOT_RUN_DELAY_S,
            )
            return NotRun(f"no child process could run it: {exc}")
        if result.returned:
            return Settled(result.value)
        if result.timed_out:
            return TimedOut(spec.timeout_s or 0.0)
        if result.stopped:
            return Lost("stopped while running in a child process")
        if result.error is not None:
            return Raised(f"the child process failed: {result.error}", permanent=False)
        return Crashed(result.describe_death())

    def _isolator_for(self) -> Any:
        with self._lock:
            if self._isolator is None:
                from pg_pipeline.isolation import Isolator

                modules = {
                    s.fn.__module__ for s in self.specs.values() if s.fn.__module__ != "__main__"
                }
                self._isolator = Isolator(preload=sorted(modules | {__name__}))
            return self._isolator

    def close(self) -> None:
        with self._lock:
            if self._isolator is not None:
                self._isolator.close()


def _child_can_run(spec: StageSpec) -> bool:
    """The child finds a stage by importing its module into the default registry."""
    return spec.fn.__module__ != "__main__" and REGISTRY.get_or_none(spec.name) is spec
