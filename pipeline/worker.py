"""The worker process: claims jobs into a thread pool and keeps their leases alive.

It composes the parts; it does not contain them. The claim loop runs on the calling thread;
side threads (heartbeat, acknowledgements, maintenance, listener) are named, and if one dies
unexpectedly the worker stops rather than run without it.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pipeline.context import Context
from pipeline.db import DB_DOWN, make_pool
from pipeline.executor import Outcome, TimedOut, run_job, settle
from pipeline.listener import Listener
from pipeline.maintenance import Reclaimer, WorkerPruner
from pipeline.runs import run_output, run_outputs
from pipeline.settings import WorkerSettings
from pipeline.stage import REGISTRY, Registry, StageSpec
from pipeline.store import ClaimedJob, JobStore

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(eq=False)
class InFlight:
    job: ClaimedJob
    spec: StageSpec
    ctx: Context
    deadline: float | None  # monotonic; None without a stage timeout
    returned: bool = False  # the stage function has returned
    timed_out: bool = False  # the timeout was written; the function may still run
    lease_until: float = field(default=0.0)  # monotonic estimate, for how long to retry writes


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
        self._stopping = threading.Event()  # stop claiming
        self._halt = threading.Event()  # stop the side threads; shutdown is over
        self._wake = threading.Event()
        self._grace_over = threading.Event()
        self._lock = threading.Lock()
        self._inflight: dict[int, InFlight] = {}
        self._running = 0  # claimed jobs not yet settled by their runner thread
        self._todo: queue.SimpleQueue[InFlight | None] = queue.SimpleQueue()
        self._acks: queue.SimpleQueue[InFlight | None] = queue.SimpleQueue()
        self._fatal: BaseException | None = None
        self._threads: list[threading.Thread] = []
        pool_size = self.settings.concurrency + 4  # runners + claim, heartbeat, acks, maintenance
        self.pool = make_pool(dsn, max_size=pool_size, name="pg-pipeline worker")
        self.store = JobStore(self.pool)
        self.reclaimer = Reclaimer(self.pool)
        self.pruner = WorkerPruner(self.pool, self.settings.worker_prune_after_s)

    # -- public -------------------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def stop(self, *, now: bool = False) -> None:
        """Stop claiming and drain; with now=True (a second signal) skip the grace period."""
        self._stopping.set()
        if now:
            self._grace_over.set()
        self._wake.set()

    def run(self) -> int:
        """Run until stop(); returns the process exit code (0 clean, 1 a side task died)."""
        self._retry_db(
            "register",
            lambda: self.store.register_worker(
                self.id, sorted(self.specs), self.settings.concurrency
            ),
        )
        log.info(
            "worker %s started: stages %s, concurrency %d",
            self.id,
            sorted(self.specs),
            self.settings.concurrency,
        )
        for n in range(self.settings.concurrency):
            self._spawn(f"runner-{n}", self._runner, critical=True)
        self._spawn("heartbeat", self._heartbeat_loop, critical=True)
        self._spawn("acknowledger", self._ack_loop, critical=True)
        self._spawn("maintenance", self._maintenance_loop, critical=True)
        if self.settings.listen:
            listener = Listener(
                self.dsn,
                on_ready=self._on_ready,
                on_cancel=self._on_cancel,
                stop=self._halt,
                retry_max_s=self.settings.db_retry_max_s,
            )
            self._spawn("listener", listener.run, critical=True)
        try:
            self._claim_loop()
        finally:
            self._shutdown()
        return 1 if self._fatal is not None else 0

    # -- the claim loop -----------------------------------------------------------------------

    def _claim_loop(self) -> None:
        types = sorted(self.specs)
        delay = 0.1
        while not self._stopping.is_set():
            self._wake.clear()
            self._expire_timeouts()
            with self._lock:
                free = self.settings.concurrency - self._running
            want = min(free, self.settings.claim_batch_max)
            got = 0
            if want > 0:
                try:
                    jobs = self.store.claim(types, want, self.id)
                except DB_DOWN as exc:
                    log.warning(
                        "claim failed, database unavailable (%s); retrying in %.1f s", exc, delay
                    )
                    self._stopping.wait(delay)
                    delay = min(self.settings.db_retry_max_s, delay * 2)
                    continue
                delay = 0.1
                for job in jobs:
                    self._dispatch(job)
                got = len(jobs)
                if got == want and want < free:
                    continue  # a full batch and slots left: more may be ready right now
            self._wake.wait(self._idle_wait())

    def _idle_wait(self) -> float:
        wait = self.settings.poll_interval_s
        now = time.monotonic()
        with self._lock:
            deadlines = [
                e.deadline
                for e in self._inflight.values()
                if e.deadline is not None and not e.timed_out
            ]
        if deadlines:
            wait = max(0.0, min(wait, min(deadlines) - now))
        return wait

    def _dispatch(self, job: ClaimedJob) -> None:
        spec = self.specs[job.type]
        ctx = Context(
            root_id=job.root_id,
            read_outputs=self._read_outputs,
            job_id=job.id,
            stage=job.type,
            attempt=job.attempts,
            max_attempts=job.max_attempts,
            tenant_id=job.tenant_id,
            parent_id=job.parent_id,
            registry=self.registry,
        )
        now = time.monotonic()
        entry = InFlight(
            job,
            spec,
            ctx,
            deadline=None if spec.timeout_s is None else now + spec.timeout_s,
            lease_until=now + job.lease_seconds,
        )
        with self._lock:
            self._inflight[job.id] = entry
            self._running += 1
        self._todo.put(entry)

    def _on_ready(self, job_type: str) -> None:
        if not job_type or job_type in self.specs:
            self._wake.set()

    def _on_cancel(self, job_id: int, attempts: int) -> None:
        with self._lock:
            entry = self._inflight.get(job_id)
        if entry is not None and entry.job.attempts == attempts:
            log.info("job %s was cancelled while running", job_id)
            entry.ctx.lost_lease.set()

    # -- running and settling -----------------------------------------------------------------

    def _runner(self) -> None:
        while True:
            entry = self._todo.get()
            if entry is None:
                return
            outcome = run_job(entry.spec, entry.job, entry.ctx, self._find_output)
            try:
                self._settle(entry, outcome)
            finally:
                with self._lock:
                    entry.returned = True
                    self._running -= 1
                self._wake.set()

    def _settle(self, entry: InFlight, outcome: Outcome) -> None:
        if entry.timed_out:
            self._forget(entry)
            return  # its timeout was written already; this late result is discarded
        result = self._retry_db(
            f"settle job {entry.job.id}",
            lambda: settle(
                self.store, entry.spec, entry.job, entry.ctx, outcome, lambda: self._acks.put(entry)
            ),
            until=entry.lease_until,
        )
        if result != "acked":
            self._forget(entry)
        self._log_result(entry, result)

    def _ack_loop(self) -> None:
        """Buffers plain completions and writes them in batches, still fenced job by job."""
        finishing = False
        while not finishing:
            first = self._acks.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.settings.ack_batch_max:
                try:
                    more = self._acks.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    finishing = True
                    break
                batch.append(more)
            fences = [e.job.fence for e in batch]
            confirmed = self._retry_db(
                "acknowledge",
                lambda f=fences: self.store.complete(f),  # type: ignore[misc]
                until=min(e.lease_until for e in batch),
            )
            for entry in batch:
                self._forget(entry)
                if confirmed is not None and entry.job.id not in confirmed:
                    self._log_result(entry, "lost")

    def _expire_timeouts(self) -> None:
        now = time.monotonic()
        with self._lock:
            due = [
                e
                for e in self._inflight.values()
                if e.deadline is not None
                and now >= e.deadline
                and not e.returned
                and not e.timed_out
            ]
            for entry in due:
                entry.timed_out = True
        for entry in due:
            self._time_out(entry)

    def _time_out(self, entry: InFlight) -> None:
        entry.ctx.lost_lease.set()
        outcome = TimedOut(entry.spec.timeout_s or 0.0)
        result = self._retry_db(
            f"time out job {entry.job.id}",
            lambda: settle(self.store, entry.spec, entry.job, entry.ctx, outcome, lambda: None),
            until=entry.lease_until,
        )
        self._log_result(entry, result)

    def _forget(self, entry: InFlight) -> None:
        with self._lock:
            if self._inflight.get(entry.job.id) is entry:
                del self._inflight[entry.job.id]

    def _log_result(self, entry: InFlight, result: str | set[int] | None) -> None:
        job = entry.job
        if result == "lost":
            log.warning(
                "job %s (%s) attempt %d lost its lease: its result was discarded",
                job.id,
                job.type,
                job.attempts,
            )
        elif result is None:
            log.warning(
                "job %s (%s): database unavailable, leaving it to reclaim", job.id, job.type
            )
        else:
            log.debug("job %s (%s) attempt %d: %s", job.id, job.type, job.attempts, result)

    def _find_output(self, root_id: int, stage: str, part: int) -> Any:
        with self.pool.connection() as conn:
            return run_output(conn, root_id, stage, part)

    def _read_outputs(self, root_id: int, stage: str) -> list[tuple[int, Any]]:
        with self.pool.connection() as conn:
            return run_outputs(conn, root_id, stage)

    # -- side loops ---------------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        interval = min(spec.heartbeat_s for spec in self.specs.values())
        while not self._halt.wait(interval):
            with self._lock:
                held = [e for e in self._inflight.values() if not e.timed_out]
            try:
                owned = self.store.heartbeat(self.id, [e.job.fence for e in held])
            except DB_DOWN as exc:
                log.warning("heartbeat failed, database unavailable (%s)", exc)
                continue
            now = time.monotonic()
            for entry in held:
                if entry.job.id in owned:
                    entry.lease_until = now + entry.job.lease_seconds
                elif not entry.returned and not entry.ctx.lost_lease.is_set():
                    log.warning(
                        "job %s (%s) attempt %d lost its lease; telling the stage",
                        entry.job.id,
                        entry.job.type,
                        entry.job.attempts,
                    )
                    entry.ctx.lost_lease.set()

    def _maintenance_loop(self) -> None:
        interval = self.settings.reclaim_interval_s
        while True:
            try:
                self.reclaimer.run_once()
                self.pruner.run_once()
            except DB_DOWN as exc:
                log.warning("maintenance skipped, database unavailable (%s)", exc)
            # Jitter so that workers started together do not reclaim in lockstep.
            if self._halt.wait(interval * random.uniform(0.8, 1.2)):
                return

    # -- shutdown -----------------------------------------------------------------------------

    def _shutdown(self) -> None:
        grace = self.settings.grace_period_s
        if self._running:
            log.info("stopping: waiting up to %.0f s for %d running job(s)", grace, self._running)
        deadline = time.monotonic() + grace
        while self._running and time.monotonic() < deadline and not self._grace_over.is_set():
            self._wake.wait(min(0.2, max(0.0, deadline - time.monotonic())))
            self._wake.clear()
        with self._lock:
            leftover = [e for e in self._inflight.values() if not e.returned and not e.timed_out]
        for entry in leftover:
            entry.ctx.lost_lease.set()
        if leftover:
            fences = [e.job.fence for e in leftover]
            released = self._retry_db(
                "release",
                lambda: self.store.release(fences),
                until=time.monotonic() + 5,
            )
            log.warning(
                "grace period over: released %d job(s) back to the queue: %s",
                len(released or ()),
                sorted(released or ()),
            )
        for _ in range(self.settings.concurrency):
            self._todo.put(None)
        self._acks.put(None)
        for thread in self._threads:
            if thread.name.endswith("acknowledger"):
                thread.join(timeout=10)
        self._halt.set()
        for thread in self._threads:
            if not thread.name.startswith("pipeline-runner"):
                thread.join(timeout=2)  # the listener leaves within one notifies() timeout
        self._retry_db(
            "unregister", lambda: self.store.unregister_worker(self.id), until=time.monotonic() + 5
        )
        self.pool.close(timeout=5)
        log.info("worker %s stopped", self.id)

    # -- helpers ------------------------------------------------------------------------------

    def _spawn(self, name: str, target: Callable[[], None], *, critical: bool) -> None:
        def guarded() -> None:
            try:
                target()
            except BaseException as exc:  # a side task dying must not go unnoticed
                if critical and not self._halt.is_set():
                    log.exception("side task %s died; stopping the worker", name)
                    self._fatal = exc
                    self.stop(now=True)

        thread = threading.Thread(target=guarded, name=f"pipeline-{name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _retry_db(
        self, what: str, call: Callable[[], T], *, until: float | None = None
    ) -> T | None:
        """Call until it gets through the database; None if `until` (monotonic) passes first or
        the worker halts. A write that gave up is left to reclaim, which is always safe."""
        delay = 0.05
        while True:
            try:
                return call()
            except DB_DOWN as exc:
                if self._halt.is_set() or (until is not None and time.monotonic() >= until):
                    log.warning("%s: giving up, database unavailable (%s)", what, exc)
                    return None
                log.warning("%s failed, database unavailable (%s); retrying", what, exc)
                time.sleep(delay)
                delay = min(self.settings.db_retry_max_s, delay * 2)
