"""A claimed job's way from the producer to the completer.

dispatch() puts the job in the in-flight table (so the heartbeat keeps its lease) and on the
runners' queue; a runner thread calls execute(), which runs it (pipeline/executor.run_job, or
alone in a child process), lets outcomes.decide say what the database must record, and hands
that to the completer. Nothing here writes to the database or decides an outcome.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Protocol

from pg_pipeline.context import Context
from pg_pipeline.executor import NOTHING, forget_thread_cpu, run_job
from pg_pipeline.limits import Counters
from pg_pipeline.logs import running
from pg_pipeline.outcomes import (
    PLAIN_COMPLETE,
    Complete,
    Discard,
    Fail,
    GiveBack,
    LostWhileRunning,
    Retry,
    RunResult,
    Transition,
    Unfit,
    Wait,
    decide,
)
from pg_pipeline.stage import Registry, StageSpec
from pg_pipeline.store import ClaimedJob
from pg_pipeline.tracing import JobSpan, JobTracer
from pg_pipeline.usage import Usage
from pg_pipeline.worker.completer import Completer, Settled
from pg_pipeline.worker.heartbeat import Heartbeat
from pg_pipeline.worker.inflight import InFlight, InFlightTable
from pg_pipeline.worker.isolated import IsolatedRunner
from pg_pipeline.worker.outputs import Outputs
from pg_pipeline.worker.prefetch import Prefetch
from pg_pipeline.worker.runners import Runners
from pg_pipeline.worker.versions import StageVersions

log = logging.getLogger(__name__)

#: The `result` label of a run's duration: what its transition writes, or what the child
#: process confirmed; "abandoned" when a timeout or a cancel settled the job before its run ended.
RUN_RESULTS: dict[type[Transition], str] = {
    Complete: "completed",
    Retry: "retried",
    Fail: "failed",
    GiveBack: "given_back",
    Discard: "lost",
    Wait: "waiting",
}
CHILD_RESULTS = {
    Settled.DONE: "completed",
    Settled.QUEUED: "retried",
    Settled.FAILED: "failed",
    Settled.LOST: "lost",
    Settled.WAITING: "waiting",
    Settled.UNKNOWN: "unknown",
}
#: what a child settled when the run failed (its error is in the job's row, not here)
_CHILD_FAILED = (Settled.QUEUED, Settled.FAILED)


class LimitCorrections(Protocol):
    def correct_after_run(self, job: ClaimedJob, spec: StageSpec, counters: Counters) -> None:
        """Correct the job's rate-limit charges by what it used (pipeline/store.py)."""


class RunMetrics(Protocol):
    def ran(self, stage: str, result: str, seconds: float) -> None:
        """One run of a job of `stage` took `seconds` and ended as `result`."""

    def used(self, stage: str, usage: Usage) -> None:
        """What one run of a job of `stage` consumed (pipeline/usage.py)."""


@dataclass
class JobExecutor:
    registry: Registry  #: the stages' specs, and what follow-up jobs are checked against
    table: InFlightTable
    heartbeat: Heartbeat
    runners: Runners
    isolated: IsolatedRunner
    outputs: Outputs
    prefetch: Prefetch  #: told how long each run took
    completer: Completer
    versions: StageVersions  #: whether a payload this worker rejects is left to another worker
    metrics: RunMetrics | None = None  #: told how long each run took, by stage and result
    tracer: JobTracer | None = None  #: a span per run, when OpenTelemetry is set up
    #: where a run's usage corrects its rate-limit charges (Limit(actual=...))
    limits: LimitCorrections | None = None

    def dispatch(self, job: ClaimedJob) -> None:
        """A claimed job: hold it, and queue it for a runner."""
        self.dispatch_all([job])

    def dispatch_all(self, jobs: list[ClaimedJob]) -> None:
        """A claim's jobs: hold them, and queue them for the runners. The table's lock is taken
        once for them all, and the heartbeat told once: per job, that was as dear as the rest."""
        if not jobs:
            return
        registry, wanted = self.registry, self.isolated.wanted
        run_outputs, read_wait = self.outputs.run_outputs, self.outputs.read_wait
        now = time.monotonic()
        entries = []
        for job in jobs:
            spec = registry.get(job.type)
            ctx = Context.for_job(job, registry, run_outputs, read_wait)
            entries.append(InFlight(job, spec, ctx, wanted(spec, job), now + job.lease_seconds))
        self.table.add_all(entries)
        self.heartbeat.notice(min(job.lease_seconds for job in jobs))
        submit = self.runners.submit
        for entry in entries:
            submit(entry)

    def execute(self, entry: InFlight) -> None:
        """One job, start to settle; runs on a runner thread, with the job's fields on every
        log record meanwhile (pipeline/logs.py)."""
        with running(entry.job):
            if self.tracer is None:
                self._execute(entry, None)
                return
            with self.tracer.run(entry.job) as span:
                self._execute(entry, span)

    def _execute(self, entry: InFlight, span: JobSpan | None) -> None:
        started = time.monotonic()
        if not self.table.start(entry, started):
            return  # given back or cancelled while it waited for a runner
        spec, job, ctx = entry.spec, entry.job, entry.ctx
        ran: RunResult | Settled
        if entry.isolated:
            ran = self.isolated.run(entry)
        else:
            ran = run_job(spec, job, ctx, self.outputs.job_output)
        if isinstance(ran, Unfit):
            ran = self.versions.judge(job, ran)
        now = time.monotonic()
        took = now - started
        self.prefetch.observe(spec.name, took, now)
        # Metrics and spans are off by default: then nothing is looked up for them per job.
        observed = self.metrics is not None or span is not None
        if not self.table.finish_run(entry):
            if observed:
                self._observe(entry, "abandoned", took, span)
            return  # a timeout or a cancel settled it already; this late result is dropped
        if isinstance(ran, Settled):
            failed = "the run failed in its child process" if ran in _CHILD_FAILED else None
            if observed:
                self._observe(entry, CHILD_RESULTS.get(ran, "unknown"), took, span, failed)
            # The child process settled it, and logged its line.
            self.completer.publish(job, ran, logged=True)
            return
        if spec.limits and self.limits is not None:
            self.limits.correct_after_run(job, spec, ctx.usage_counters())
        if self.metrics is not None:
            try:
                self.metrics.used(spec.name, ctx.usage_record)
            except Exception:  # a metric must not keep a job from settling
                log.exception("job %s: counting its usage failed", job.id)
        if ran is NOTHING and not ctx.lost_lease.is_set():
            transition: Transition = PLAIN_COMPLETE  # what decide() makes of it, without asking
        else:
            transition = decide(
                spec, job, LostWhileRunning(ran) if ctx.lost_lease.is_set() else ran
            )
        if observed:
            error = transition.error if isinstance(transition, Retry | Fail) else None
            self._observe(entry, RUN_RESULTS[type(transition)], took, span, error)
        self.completer.apply(job, transition, until=entry.lease_until, usage=ctx.usage_record)
        if transition is not PLAIN_COMPLETE and not (
            isinstance(transition, Complete) and transition.plain
        ):
            forget_thread_cpu()  # this thread wrote the transition: not the next job's CPU

    def _observe(
        self,
        entry: InFlight,
        result: str,
        seconds: float,
        span: JobSpan | None,
        error: str | None = None,
    ) -> None:
        try:
            if self.metrics is not None:
                self.metrics.ran(entry.spec.name, result, seconds)
            if span is not None:
                span.ended(result, error)
        except Exception:  # a metric or a span must not keep a job from settling
            log.exception("job %s: recording its run failed", entry.job.id)

    def let_go(self, entry: InFlight) -> None:
        """A runner failed on this job (a bug of ours): free its slot and stop heartbeating
        it, so its lease runs out and reclaim hands it on instead of it staying running."""
        self.table.finish_run(entry)
        self.table.forget(entry)

    def cancel(self, job_id: int, claim: int) -> None:
        """The job was cancelled (its row says so: cancels.py checked): tell its stage, and free
        its slot."""
        entry = self.table.get(job_id)
        if entry is None or entry.job.claim != claim:
            return
        log.info("job %s was cancelled while running", job_id)
        entry.ctx.lost_lease.set()  # a child process is killed on this
        if not entry.isolated and self.table.abandon(entry):
            self.table.forget(entry)
            if entry.started:
                # The stage's thread may not notice for a while, so its slot goes to a new
                # thread now.
                self.runners.replace(entry)
