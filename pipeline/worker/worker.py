"""The worker process: it composes the producer (claims), the runners (threads, or a child
process for a suspect job), the completer (every write that ends a claim), the heartbeat, the
listener and the maintenance services; it does not contain them.

Side threads are named, and if one dies unexpectedly the worker stops rather than run without
it. Nothing a job does reaches that far: runs are classified by the executor, settled by the
completer, and a runner that fails for any reason leaves its job to reclaim.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from pipeline.context import Context
from pipeline.db import listen_dsn, make_pool
from pipeline.errors import DatabaseUnavailable, PipelineError
from pipeline.executor import run_job
from pipeline.listener import Listener
from pipeline.maintenance import Maintainer
from pipeline.outcomes import (
    Crashed,
    Lost,
    LostWhileRunning,
    Outcome,
    Raised,
    RunResult,
    TimedOut,
    decide,
)
from pipeline.reconnecting import retry_db
from pipeline.runs import job_output, run_outputs
from pipeline.schedules import SCHEDULES, sync_schedules
from pipeline.settings import WorkerSettings
from pipeline.stage import REGISTRY, Registry, StageSpec
from pipeline.store import ClaimedJob, JobStore, WorkerInfo
from pipeline.worker.completer import Completer, Settled
from pipeline.worker.heartbeat import Heartbeat
from pipeline.worker.inflight import InFlight, InFlightTable
from pipeline.worker.metrics import WorkerMetrics
from pipeline.worker.prefetch import Prefetch
from pipeline.worker.producer import Producer
from pipeline.worker.runners import Runners
from pipeline.worker.timeouts import Timeouts

log = logging.getLogger("pipeline.worker")

EXIT_OK, EXIT_FATAL = 0, 1
OUTPUT_LOOKUP_WAIT_S = 30.0  #: how long a job waits out an outage before its run starts


class Worker:
    def __init__(
        self,
        dsn: str,
        *,
        registry: Registry | None = None,
        stages: list[str] | None = None,
        settings: WorkerSettings | None = None,
    ) -> None:
        self.registry = registry or REGISTRY
        self.specs = {spec.name: spec for spec in self.registry.select(stages)}
        if not self.specs:
            raise ValueError("no stages to run: register some with @stage and load them with --app")
        self.settings = settings or WorkerSettings()
        self.dsn = dsn
        self.id = uuid.uuid4()
        self.info = WorkerInfo(self.id, sorted(self.specs), self.settings.concurrency)
        self._stopping = threading.Event()  # stop claiming
        self._halt = threading.Event()  # stop the side threads; shutdown is over
        self._wake = threading.Event()  # a job was announced or a slot was freed
        self._grace_over = threading.Event()
        self._fatal: str | None = None
        self._threads: list[threading.Thread] = []
        # runners + the claim loop, heartbeat, acknowledger, maintenance and timeouts threads
        pool_size = self.settings.concurrency + 5
        self.pool = make_pool(dsn, max_size=pool_size, name="pg-pipeline worker")
        self.store = JobStore(self.pool)
        self.metrics: WorkerMetrics | None = None
        if self.settings.metrics_port is not None:
            self.metrics = WorkerMetrics(str(self.id))
        self.table = InFlightTable(self.settings.concurrency, self._wake)
        # Up to two claims' worth ahead: the producer claims again once half is taken, so the
        # runners keep a full claim's work in hand while the next claim's round trip (and its
        # commit's WAL flush) is under way; with one claim's worth they ran dry in between.
        self.prefetch = Prefetch(
            self.settings.concurrency, self.settings.prefetch, 2 * self.settings.claim_batch_max
        )
        self.completer = Completer(
            self.store,
            halt=self._halt,
            retry_max_s=self.settings.db_retry_max_s,
            batch_max=self.settings.ack_batch_max,
            on_settled=self._on_settled,
            on_acknowledged=self._on_acknowledged,
        )
        self.runners = Runners(
            self._execute,
            on_error=self._let_go,
            count=self.settings.concurrency,
            max_abandoned=self.settings.max_stuck_threads,
            on_too_many=self._fail_fatally,
        )
        self.heartbeat = Heartbeat(
            self.store,
            self.info,
            self.table,
            interval_s=min(spec.heartbeat_s for spec in self.specs.values()),
            halt=self._halt,
        )
        self.producer = Producer(
            self.store,
            self.table,
            types=list(self.specs),
            caps={
                name: spec.tenant_cap if spec.tenant_cap is not None else self.settings.tenant_cap
                for name, spec in self.specs.items()
            },
            worker_id=self.id,
            batch_max=self.settings.claim_batch_max,
            ahead=self.prefetch.extra,
            poll_interval_s=self.settings.poll_interval_s,
            retry_max_s=self.settings.db_retry_max_s,
            dispatch=self._dispatch,
            stopping=self._stopping,
            wake=self._wake,
            on_claimed=self._on_claimed,
        )
        self.timeouts = Timeouts(self.table, self.runners, self.completer, halt=self._halt)
        self.maintainer = Maintainer.for_worker(self.pool, self.settings, halt=self._halt)
        self._isolator: Any = None  # started on the first isolated job
        self._isolator_lock = threading.Lock()

    # -- public -------------------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    @property
    def fatal(self) -> str | None:
        """Why the worker stopped on its own, if it did."""
        return self._fatal

    def stop(self, *, now: bool = False) -> None:
        """Stop claiming and drain; with now=True (a second signal) skip the grace period."""
        self._stopping.set()
        if now:
            self._grace_over.set()
        self._wake.set()

    def run(self) -> int:
        """Run until stop(); returns the process exit code (0 clean, 1 the worker had to stop)."""
        self._retry("register", lambda: self.store.register_worker(self.info))
        try:
            self._retry("sync schedules", self._sync_schedules)
        except PipelineError as exc:  # a schedule in code names an unknown stage, say
            self._fatal = f"schedules declared in code cannot be synced: {exc}"
            log.error("worker %s stopped: %s", self.id, self._fatal)
            self._retry("unregister", lambda: self.store.unregister_worker(self.id))
            self.pool.close(timeout=5)
            return EXIT_FATAL
        log.info(
            "worker %s started: stages %s, concurrency %d",
            self.id,
            sorted(self.specs),
            self.settings.concurrency,
        )
        if self.metrics is not None and self.settings.metrics_port is not None:
            self.metrics.serve(self.settings.metrics_port, self.pool)
            log.info("metrics at http://0.0.0.0:%s/metrics", self.metrics.port)
        self.runners.start()
        self._spawn("heartbeat", self.heartbeat.run)
        self._spawn("acknowledger", self.completer.run_acks)
        self._spawn("timeouts", self.timeouts.run)
        self._spawn("maintenance", self.maintainer.run)
        # Detecting a pooler takes a round trip: an outage here must not stop the worker.
        listen_to = (
            self._retry("find where to listen", lambda: listen_dsn(self.dsn))
            if self.settings.listen
            else None
        )
        if listen_to is not None:
            listener = Listener(
                listen_to,
                on_ready=self._on_ready,
                on_cancel=self._on_cancel,
                stop=self._halt,
                retry_max_s=self.settings.db_retry_max_s,
            )
            self._spawn("listener", listener.run)
        try:
            self.producer.run()
        finally:
            self._shutdown()
        if self._fatal is not None:
            log.error("worker %s stopped: %s", self.id, self._fatal)
            return EXIT_FATAL
        return EXIT_OK

    # -- dispatch and execution ---------------------------------------------------------------

    def _dispatch(self, job: ClaimedJob) -> None:
        spec = self.specs[job.type]
        ctx = Context.for_job(job, self.registry, self._run_outputs)
        entry = InFlight(
            job,
            spec,
            ctx,
            isolated=self._isolate(spec, job),
            lease_until=time.monotonic() + job.lease_seconds,
        )
        self.table.add(entry)
        self.heartbeat.notice(job.lease_seconds)
        self.runners.submit(entry)

    def _isolate(self, spec: StageSpec, job: ClaimedJob) -> bool:
        if spec.isolation != "process" and not job.suspect:
            return False
        # The child finds the stage by importing its module into the default registry.
        if spec.fn.__module__ == "__main__" or REGISTRY.get_or_none(spec.name) is not spec:
            if spec.isolation == "process":
                log.error("stage %s cannot run in a child process: define it in a module", spec)
            return False
        return True

    def _execute(self, entry: InFlight) -> None:
        """One job, start to settle; runs on a runner thread."""
        started = time.monotonic()
        if not self.table.start(entry, started):
            return  # given back or cancelled while it waited for a runner
        ran: RunResult | None
        if entry.isolated:
            ran = self._run_isolated(entry)
        else:
            ran = run_job(entry.spec, entry.job, entry.ctx, self._job_output)
        self.prefetch.observe(entry.spec.name, time.monotonic() - started)
        if not self.table.finish_run(entry):
            return  # a timeout or a cancel settled it already; this late result is dropped
        if ran is None:
            self.table.forget(entry)  # the child process settled it
            return
        outcome: Outcome = LostWhileRunning(ran) if entry.ctx.lost_lease.is_set() else ran
        transition = decide(entry.spec, entry.job, outcome)
        self.completer.apply(entry.job, transition, until=entry.lease_until)

    def _let_go(self, entry: InFlight) -> None:
        """A runner failed on this job (a bug of ours): free its slot and stop heartbeating
        it, so its lease runs out and reclaim hands it on instead of it staying running."""
        self.table.finish_run(entry)
        self.table.forget(entry)

    def _run_isolated(self, entry: InFlight) -> RunResult | None:
        from pipeline.isolation import IsolationError
        from pipeline.worker.isolated import run_alone

        spec, job = entry.spec, entry.job
        log.info("job %s (%s) runs alone in a child process", job.id, job.type)
        try:
            result = self._isolator_for().run(
                run_alone,
                (self.dsn, spec.fn.__module__, spec.name, job),
                timeout_s=spec.timeout_s,
                stop=entry.ctx.lost_lease,
            )
        except IsolationError as exc:
            # The machinery failed, not the job: run it the ordinary way rather than not at all.
            log.error(
                "job %s cannot run in a child process (%s); running it in a thread", job.id, exc
            )
            return run_job(spec, job, entry.ctx, self._job_output)
        if result.returned:
            if self.metrics is not None and result.value != Settled.BATCHED:
                self.metrics.settled(job.type, str(result.value))
            self._log_settled(job, result.value)
            return None
        if result.timed_out:
            return TimedOut(spec.timeout_s or 0.0)
        if result.stopped:
            return Lost("stopped while running in a child process")
        if result.error is not None:
            return Raised(f"the child process failed: {result.error}", permanent=False)
        return Crashed(result.describe_death())

    def _isolator_for(self) -> Any:
        with self._isolator_lock:
            if self._isolator is None:
                from pipeline.isolation import Isolator

                modules = {
                    s.fn.__module__ for s in self.specs.values() if s.fn.__module__ != "__main__"
                }
                self._isolator = Isolator(preload=sorted(modules | {"pipeline.worker.isolated"}))
            return self._isolator

    def _on_settled(self, job: ClaimedJob, settled: Settled) -> None:
        if settled != Settled.BATCHED:
            self.producer.settled()
            if self.metrics is not None:
                self.metrics.settled(job.type, settled)
        self.table.forget_claim(job)
        self._log_settled(job, settled)

    def _sync_schedules(self) -> None:
        with self.pool.connection() as conn:
            synced = sync_schedules(conn, SCHEDULES, stages=REGISTRY)
        if synced.upserted or synced.removed:
            log.info("schedules from code: %s synced, %s removed", synced.upserted, synced.removed)

    def _on_claimed(self, count: int, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.claimed(count, seconds)

    def _on_acknowledged(self, count: int, seconds: float) -> None:
        self.producer.settled()
        if self.metrics is not None:
            self.metrics.acknowledged(count, seconds)

    def _log_settled(self, job: ClaimedJob, settled: Any) -> None:
        if settled == Settled.LOST:
            log.warning(
                "job %s (%s) claim %d lost its lease: its result was discarded",
                job.id,
                job.type,
                job.claim,
            )
        elif settled == Settled.UNKNOWN:
            log.warning(
                "job %s (%s): database unavailable, leaving it to reclaim", job.id, job.type
            )
        else:
            log.debug("job %s (%s) attempt %d: %s", job.id, job.type, job.attempts, settled)

    def _job_output(self, job_id: int) -> Any:
        def read() -> Any:
            with self.pool.connection() as conn:
                return job_output(conn, job_id)

        # Ride out a short outage; past it, raise, and the executor leaves the job unrun.
        found = self._retry(
            f"look up job {job_id}'s output",
            lambda: [read()],
            until=time.monotonic() + OUTPUT_LOOKUP_WAIT_S,
        )
        if found is None:
            raise DatabaseUnavailable(f"job {job_id}: cannot tell whether it already ran")
        return found[0]

    def _run_outputs(self, root_id: int, stage: str) -> list[tuple[int | None, Any]]:
        with self.pool.connection() as conn:
            return run_outputs(conn, root_id, stage)

    # -- notifications ------------------------------------------------------------------------

    def _on_ready(self, job_type: str) -> None:
        if not job_type or job_type in self.specs:
            self._wake.set()

    def _on_cancel(self, job_id: int, claim: int) -> None:
        entry = self.table.get(job_id)
        if entry is None or entry.job.claim != claim:
            return
        log.info("job %s was cancelled while running", job_id)
        entry.ctx.lost_lease.set()  # a child process is killed on this
        if not entry.isolated and self.table.abandon(entry):
            self.table.forget(entry)
            if entry.started:
                # The row says cancelled already; the stage's thread may not notice for a
                # while, so its slot goes to a new thread now.
                self.runners.replace(entry)

    # -- shutdown -----------------------------------------------------------------------------

    def _shutdown(self) -> None:
        self._give_back_waiting()
        grace = self.settings.grace_period_s
        busy = self.table.busy()
        if busy:
            log.info("stopping: waiting up to %.0f s for %d running job(s)", grace, busy)
        deadline = time.monotonic() + grace
        while (
            self.table.busy()
            and time.monotonic() < deadline
            and not self._grace_over.is_set()
            and self._fatal is None
        ):
            self._wake.wait(min(0.2, max(0.0, deadline - time.monotonic())))
            self._wake.clear()
        leftover = [e for e in self.table.running() if self.table.abandon(e)]
        for entry in leftover:
            entry.ctx.lost_lease.set()
        if leftover:
            fences = [e.job.fence for e in leftover]
            released = self._retry(
                "release", lambda: self.store.release(fences), until=time.monotonic() + 5
            )
            log.warning(
                "grace period over: released %d job(s) back to the queue: %s",
                len(released or {}),
                sorted(released or {}),
            )
            for entry in leftover:
                self.table.forget(entry)
        self.runners.stop()
        self.completer.close()
        for thread in self._threads:
            if thread.name.endswith("acknowledger"):
                thread.join(timeout=10)
        self._halt.set()
        self.heartbeat.stop()
        self.timeouts.stop()
        for thread in self._threads:
            thread.join(timeout=2)  # the listener leaves within one notifies() timeout
        self._retry(
            "unregister", lambda: self.store.unregister_worker(self.id), until=time.monotonic() + 5
        )
        if self._isolator is not None:
            self._isolator.close()
        if self.metrics is not None:
            self.metrics.close()
        self.pool.close(timeout=5)
        log.info("worker %s stopped", self.id)

    def _give_back_waiting(self) -> None:
        """Jobs claimed ahead that no runner took: back to the queue at once, uncharged, for
        other workers to run while this one finishes what it started."""
        waiting = self.table.take_waiting()
        if not waiting:
            return
        returned = self._retry(
            "give back claimed-ahead jobs",
            lambda: self.store.unclaim([e.job.fence for e in waiting]),
            until=time.monotonic() + 5,
        )
        log.info("stopping: gave back %d job(s) claimed ahead", len(returned or ()))
        for entry in waiting:
            self.table.forget(entry)

    # -- helpers ------------------------------------------------------------------------------

    def _fail_fatally(self, reason: str) -> None:
        if self._fatal is None:
            self._fatal = reason
            log.error("%s", reason)
        self.stop()

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        def guarded() -> None:
            try:
                target()
            except BaseException as exc:  # a side task dying must not go unnoticed
                if not self._halt.is_set():
                    log.exception("side task %s died; stopping the worker", name)
                    self._fail_fatally(f"side task {name} died: {type(exc).__name__}: {exc}")
                    self._grace_over.set()

        thread = threading.Thread(target=guarded, name=f"pipeline-{name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _retry(self, what: str, call: Callable[[], Any], *, until: float | None = None) -> Any:
        return retry_db(
            what, call, halt=self._halt, max_delay_s=self.settings.db_retry_max_s, until=until
        )
