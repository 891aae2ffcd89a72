"""Run an application's stages to the end in its tests: `drain` claims and runs jobs in the
calling thread, one at a time, against a real database, until a run (or the queue) has nothing
ready, and says what became of them. No worker thread, no polling, no sleeps.

It goes the worker's way through each job: the same claim, `run_job`, `outcomes.decide` and
`Completer`, so outputs, follow-ups, joins and on_complete steps commit as they would in
production. What differs, so that a test is deterministic and quick:

* `retry_now=True` (the default): a retry is written with no backoff, so the job is ready again
  at once and the drain runs it next instead of waiting for it; `retry_now=False` leaves the
  backoff as it is, and the drain stops with the job still queued (counted in `left`).
* every job runs in the calling thread: no child process (`isolation="process"` is not
  applied) and no timeout (the stage runs until it returns).
* jobs whose `run_after` lies in the future (enqueued with a delay, or scheduled) are not run.

The jobs to drain must be committed: the helper uses connections of its own, as a worker does.

With pytest, `pipeline_drain` is a fixture (add `from pg_pipeline.testing import pipeline_drain`
to a conftest.py): `drain` with DATABASE_URL filled in. pytest is not a dependency of the
package: without it, the fixture is simply not defined.
"""

from __future__ import annotations

import dataclasses
import importlib
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool

from pg_pipeline.context import Context
from pg_pipeline.db import database_url, make_pool
from pg_pipeline.executor import forget_thread_cpu, run_job
from pg_pipeline.logs import running
from pg_pipeline.outcomes import Fail, Retry, Transition, decide
from pg_pipeline.runs import TERMINAL, job_output, run_outputs, run_progress
from pg_pipeline.settings import WorkerSettings
from pg_pipeline.stage import REGISTRY, Registry
from pg_pipeline.store import ClaimedJob, JobStore
from pg_pipeline.tracing import JobSpan, job_tracer
from pg_pipeline.waits import WaitRecord, read_wait
from pg_pipeline.worker.completer import Completer, Settled
from pg_pipeline.worker.job_executor import RUN_RESULTS
from pg_pipeline.worker.producer import ClaimPlan

__all__ = ["Drained", "drain"]

#: jobs a drain runs at most: a stage that enqueues itself forever fails the test, not hangs it
MAX_JOBS = 10_000


@dataclass
class Drained:
    """What a drain ran: job ids by what became of them, in the order they settled."""

    done: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)  #: job id -> its error
    retried: list[int] = field(default_factory=list)  #: one entry per retry
    lost: list[int] = field(default_factory=list)  #: cancelled while running, say
    #: jobs whose stage waits for a signal (ctx.wait_for), in the order they began to
    waiting: list[int] = field(default_factory=list)
    #: jobs of the run neither finished nor running when the drain stopped (None without run_id)
    left: int | None = None

    @property
    def ok(self) -> bool:
        """Nothing failed and, for a run, nothing is left."""
        return not self.failed and not self.lost and not self.left


def drain(
    db: str | psycopg.Connection[Any],
    *,
    app: str | Sequence[str] = (),
    registry: Registry | None = None,
    stages: Sequence[str] | None = None,
    run_id: int | None = None,
    retry_now: bool = True,
    max_jobs: int = MAX_JOBS,
) -> Drained:
    """Run ready jobs of the stages (all of `registry`'s, after importing the `app` modules)
    until none is ready, or, with `run_id`, until that run has nothing left to run (jobs of
    other runs claimed on the way are run too). `db`: a connection string, or a connection
    whose server and user are used."""
    for module in [app] if isinstance(app, str) else app:
        importlib.import_module(module)
    registry = registry or REGISTRY
    specs = {spec.name: spec for spec in registry.select(stages)}
    if not specs:
        raise ValueError("no stages to drain: register some with @stage, or name the app")
    # The worker's claim, tenant caps declared in code included.
    plan = ClaimPlan.for_worker(uuid.uuid4(), specs, WorkerSettings())
    pool = make_pool(_dsn(db), max_size=2, name="pg-pipeline testing")
    try:
        return _Drain(pool, registry, plan, retry_now).run(run_id, max_jobs)
    finally:
        pool.close()


class _Drain:
    def __init__(
        self, pool: ConnectionPool, registry: Registry, plan: ClaimPlan, retry_now: bool
    ) -> None:
        self.pool = pool
        self.registry = registry
        self.plan = plan
        self.retry_now = retry_now
        self.store = JobStore(pool)
        self.completer = Completer(self.store, halt=threading.Event(), retry_max_s=1.0, batch_max=1)
        self.tracer = job_tracer()  # spans as a worker's, when the test set OpenTelemetry up
        self.drained = Drained()

    def run(self, run_id: int | None, max_jobs: int) -> Drained:
        for _ in range(max_jobs):
            if run_id is not None and self._left(run_id) == 0:
                break
            plan = self.plan
            claimed = self.store.claim(plan.types, 1, plan.worker_id, plan.caps)
            if not claimed:
                break
            for job in claimed:
                self._settle(job)
        else:
            raise RuntimeError(f"the drain ran {max_jobs} jobs and jobs were still ready")
        if run_id is not None:
            self.drained.left = self._left(run_id)
        return self.drained

    def _settle(self, job: ClaimedJob) -> None:
        """The worker's way for one job: run it, decide, and write the transition, fenced."""
        with running(job):
            if self.tracer is None:
                transition, settled = self._run(job, None)
            else:
                with self.tracer.run(job) as span:
                    transition, settled = self._run(job, span)
        if settled == Settled.DONE:
            self.drained.done.append(job.id)
        elif settled == Settled.QUEUED:
            self.drained.retried.append(job.id)
        elif settled == Settled.WAITING:
            self.drained.waiting.append(job.id)
        elif settled == Settled.FAILED:
            error = transition.error if isinstance(transition, Fail | Retry) else settled
            self.drained.failed[job.id] = error
        else:
            self.drained.lost.append(job.id)

    def _run(self, job: ClaimedJob, span: JobSpan | None) -> tuple[Transition, Settled]:
        spec = self.registry.get(job.type)
        ctx = Context.for_job(job, self.registry, self._read_outputs, self._read_wait)
        forget_thread_cpu()  # this thread claimed and wrote since the last run
        outcome = run_job(spec, job, ctx, self._read_job_output)
        transition: Transition = decide(spec, job, outcome)
        if span is not None:
            error = transition.error if isinstance(transition, Fail | Retry) else None
            span.ended(RUN_RESULTS[type(transition)], error)
        if self.retry_now and isinstance(transition, Retry):
            transition = dataclasses.replace(transition, delay_s=0.0)
        until = time.monotonic() + job.lease_seconds
        return transition, self.completer.apply_now(
            job, transition, until=until, usage=ctx.usage_record
        )

    def _left(self, run_id: int) -> int:
        with self.pool.connection() as conn:
            progress = run_progress(conn, run_id)
        return sum(
            n for stage in progress for status, n in stage.counts.items() if status not in TERMINAL
        )

    def _read_outputs(
        self, root_id: int, stage: str, generation: int | None, version: str | None
    ) -> list[tuple[int | None, Any]]:
        with self.pool.connection() as conn:
            return run_outputs(conn, root_id, stage, generation, version)

    def _read_wait(self, job_id: int, name: str) -> WaitRecord | None:
        with self.pool.connection() as conn:
            return read_wait(conn, job_id, name)

    def _read_job_output(self, job_id: int) -> Any:
        with self.pool.connection() as conn:
            return job_output(conn, job_id)


def _dsn(db: str | psycopg.Connection[Any]) -> str:
    if isinstance(db, str):
        return db
    # info.dsn leaves the password out.
    password = db.info.password
    return make_conninfo(db.info.dsn, **({"password": password} if password else {}))


try:
    import pytest
except ImportError:  # pytest is not a dependency: drain() works without it
    pass
else:

    @pytest.fixture
    def pipeline_drain() -> Callable[..., Drained]:
        """`drain` on DATABASE_URL: `pipeline_drain(app="shop.stages", run_id=job_id)`."""

        def drain_database(**options: Any) -> Drained:
            return drain(database_url(), **options)

        return drain_database
