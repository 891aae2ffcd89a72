"""The worker process: it builds its parts, starts their threads and stops them in order; it
does not contain them. A job's way through them, claim to settlement:

  producer.py      claims jobs for the free slots and hands each to the executor
  job_executor.py  holds the job in the in-flight table (inflight.py; heartbeat.py keeps its
                   lease) and queues it for a runner thread (runners.py), which runs it
                   (pipeline/executor.py, or a child process: isolated.py), lets
                   pipeline/outcomes.decide map the outcome to a transition, and hands that to
  completer.py     which writes it, fenced, and publishes the settlement to the in-flight table
                   (the lease is let go), the producer (claim again if the last claim was short)
                   and the metrics.

Beside that path: timeouts.py settles thread-run jobs past their deadline, the listener wakes
the producer and cancels jobs, and the maintainer (pipeline/maintenance/) runs reclaim, the
scheduler and the other services.

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
from typing import TYPE_CHECKING, Any

import psycopg

from pg_pipeline.db import listen_dsn, make_pool
from pg_pipeline.errors import PipelineError
from pg_pipeline.extras import needs_extra
from pg_pipeline.listener import Listener
from pg_pipeline.logs import install_filter
from pg_pipeline.maintenance import Maintainer
from pg_pipeline.reconnecting import retry_db
from pg_pipeline.schedules import SCHEDULES, sync_schedules
from pg_pipeline.settings import WorkerSettings
from pg_pipeline.stage import REGISTRY, Registry
from pg_pipeline.store import JobStore, WorkerInfo, hold_ack_settings
from pg_pipeline.tracing import job_tracer
from pg_pipeline.wording import counted
from pg_pipeline.worker.cancels import CancelChecks
from pg_pipeline.worker.completer import Completer
from pg_pipeline.worker.heartbeat import Heartbeat
from pg_pipeline.worker.inflight import InFlightTable
from pg_pipeline.worker.isolated import IsolatedRunner
from pg_pipeline.worker.job_executor import JobExecutor
from pg_pipeline.worker.outputs import Outputs
from pg_pipeline.worker.prefetch import Prefetch
from pg_pipeline.worker.producer import ClaimPlan, Producer
from pg_pipeline.worker.runners import Runners
from pg_pipeline.worker.timeouts import Timeouts
from pg_pipeline.worker.versions import StageVersions

if TYPE_CHECKING:
    from pg_pipeline.worker.metrics import WorkerMetrics

log = logging.getLogger("pg_pipeline.worker")

EXIT_OK, EXIT_FATAL = 0, 1
#: every pooled connection's application_name (docs/connections.md)
POOL_NAME = "pg-pipeline worker"


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
        # A then= target missing from the code would fail every job of the stage once its work
        # is done: refused before the worker claims anything.
        self.registry.check_chains(self.specs)
        self.settings = settings or WorkerSettings()
        self.dsn = dsn
        self.id = uuid.uuid4()
        self.info = WorkerInfo(
            self.id,
            sorted(self.specs),
            self.settings.concurrency,
            {name: spec.version for name, spec in self.specs.items()},
        )
        self._halt = threading.Event()  # stop the side threads; shutdown is over
        self._wake = threading.Event()  # a slot was freed, a job announced, or stop() called
        self._grace_over = threading.Event()
        self._fatal: str | None = None
        self._threads: list[threading.Thread] = []
        self._listener: Listener | None = None
        # runners + the heartbeat, locked rows, timeouts and maintenance threads
        pool_size = self.settings.concurrency + 3 + Maintainer.threads_for(self.settings)
        self.pool = make_pool(dsn, max_size=pool_size, name=POOL_NAME)
        self.store = JobStore(self.pool)
        # The claim loop and the acknowledger, which run a statement every few milliseconds in
        # a drain, each on a connection of its own, open from the start. In the shared pool,
        # which hands out the connection idle longest and opens one more when a thread waits,
        # every connection ran every statement a few times, and a drain's first seconds opened
        # a new one per worker: a backend parses and plans a statement, and its triggers'
        # statements, afresh on its first runs (psycopg prepares one at its fifth), so with 16
        # workers on one queue a third of the server's CPU went to that (benchmarks/FLEET.md).
        # The acknowledger's connection prepares its statement at the first run, not the sixth:
        # parsing the acknowledgement cost its backend 0.6 ms a batch, and a fresh worker of a
        # fleet of sixteen wrote about six batches in a 20,000-job drain, all unprepared (a
        # warm-up's runs do not count: psycopg forgets its prepared statements at a rollback).
        self._claim_pool = make_pool(dsn, max_size=1, name=POOL_NAME)
        # On a direct connection its session holds the lock wait and the planning each batch's
        # first write needs, which is then one statement in one round trip (hold_ack_settings).
        self._ack_pool = make_pool(
            dsn, max_size=1, name=POOL_NAME, prepare_at=0, direct_session=hold_ack_settings
        )
        self.metrics: WorkerMetrics | None = None
        if self.settings.metrics_port is not None:
            # Only here: prometheus_client is the metrics extra, which a worker without
            # --metrics-port does without.
            with needs_extra("metrics", "the worker's /metrics endpoint (--metrics-port)"):
                from pg_pipeline.worker.metrics import WorkerMetrics

            self.metrics = WorkerMetrics(str(self.id))
        retry_max_s = self.settings.db_retry_max_s
        timeouts = [spec.timeout_s for spec in self.specs.values() if spec.timeout_s is not None]
        shortest = min(timeouts, default=None)
        self.table = InFlightTable(self.settings.concurrency, self._wake, shortest)
        # Up to two claims' worth ahead: the producer claims again once half is taken, so the
        # runners keep a full claim's work in hand while the next claim's round trip (and its
        # commit's WAL flush) is under way; with one claim's worth they ran dry in between.
        self.prefetch = Prefetch(
            self.settings.concurrency, self.settings.prefetch, 2 * self.settings.claim_batch_max
        )
        self.completer = Completer(
            self.store,
            halt=self._halt,
            retry_max_s=retry_max_s,
            batch_max=self.settings.ack_batch_max,
            metrics=self.metrics,
            acks=JobStore(self._ack_pool),
        )
        self.runners = Runners(
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
        self.isolated = IsolatedRunner(dsn, self.specs)
        self.executor = JobExecutor(
            registry=self.registry,
            table=self.table,
            heartbeat=self.heartbeat,
            runners=self.runners,
            isolated=self.isolated,
            outputs=Outputs(self.pool, halt=self._halt, retry_max_s=retry_max_s),
            prefetch=self.prefetch,
            completer=self.completer,
            versions=StageVersions(self.store, self.info),
            metrics=self.metrics,
            # Decided once, after the apps' modules (which may set OpenTelemetry up) loaded.
            tracer=job_tracer(),
            limits=self.store,
        )
        self.producer = Producer(
            JobStore(self._claim_pool),
            ClaimPlan.for_worker(self.id, self.specs, self.settings),
            self.table,
            self.executor,
            self.prefetch,
            self.metrics,
        )
        self.cancels = CancelChecks(self.store, self.table, self.executor)
        self.completer.subscribe(self.table)
        self.completer.subscribe(self.producer)
        self.timeouts = Timeouts(self.table, self.runners, self.completer, halt=self._halt)
        self.maintainer = Maintainer.for_worker(
            self.pool, self.settings, halt=self._halt, after=self.producer.first_claim
        )

    # -- public -------------------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self.producer.stopping

    @property
    def fatal(self) -> str | None:
        """Why the worker stopped on its own, if it did."""
        return self._fatal

    def stop(self, *, now: bool = False) -> None:
        """Stop claiming and drain; with now=True (a second signal) skip the grace period."""
        if now:
            self._grace_over.set()
        self.producer.stop()

    def run(self) -> int:
        """Run until stop(); returns the process exit code (0 clean, 1 the worker had to stop)."""
        install_filter()  # the stages' log lines carry their job, whoever configured logging
        self._retry("register", lambda: self.store.register_worker(self.info))
        self._retry(
            "record stages", lambda: self.store.record_stages(self.info, self.specs.values())
        )
        try:
            self._retry("sync schedules", self._sync_schedules)
        except PipelineError as exc:  # a schedule in code names an unknown stage, say
            self._fatal = f"schedules declared in code cannot be synced: {exc}"
            log.error("worker %s stopped: %s", self.id, self._fatal)
            self._retry("unregister", lambda: self.store.unregister_worker(self.id))
            self._close_pools()
            return EXIT_FATAL
        self._warm_up()
        log.info(
            "worker %s started: stages %s, concurrency %d",
            self.id,
            sorted(self.specs),
            self.settings.concurrency,
        )
        if self.metrics is not None and self.settings.metrics_port is not None:
            self.metrics.serve(
                self.settings.metrics_port, self.pool, addr=self.settings.metrics_host
            )
        self.runners.start(self.executor)
        self._spawn("heartbeat", self.heartbeat.run)
        self._spawn("acknowledger", self.completer.run_acks)
        self._spawn("locked-rows", self.completer.run_locked)
        self._spawn("timeouts", self.timeouts.run)
        self._spawn("maintenance", self.maintainer.run)
        # Detecting a pooler takes a round trip: an outage here must not stop the worker.
        listen_to = (
            self._retry("find where to listen", lambda: listen_dsn(self.dsn))
            if self.settings.listen
            else None
        )
        if listen_to is not None:
            self._listener = Listener(
                listen_to,
                on_ready=self.producer.announced,
                on_cancel=self.cancels.check,
                stop=self._halt,
                retry_max_s=self.settings.db_retry_max_s,
            )
            self._spawn("listener", self._listener.run)
        try:
            self.producer.run()
        finally:
            self._shutdown()
        if self._fatal is not None:
            log.error("worker %s stopped: %s", self.id, self._fatal)
            return EXIT_FATAL
        return EXIT_OK

    # -- shutdown -----------------------------------------------------------------------------

    def _shutdown(self) -> None:
        self._give_back_waiting()
        grace = self.settings.grace_period_s
        busy = self.table.busy()
        if busy:
            log.info("stopping: waiting up to %.0f s for %s", grace, counted(busy, "running job"))
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
                "grace period over: released %s back to the queue: %s",
                counted(len(released or {}), "job"),
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
        if self._listener is not None:
            self._listener.stop()
        for thread in self._threads:
            thread.join(timeout=2)
        self._retry(
            "unregister", lambda: self.store.unregister_worker(self.id), until=time.monotonic() + 5
        )
        self.isolated.close()
        if self.metrics is not None:
            self.metrics.close()
        self._close_pools()
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
        log.info("stopping: gave back %s claimed ahead", counted(len(returned or ()), "job"))
        for entry in waiting:
            self.table.forget(entry)

    # -- helpers ------------------------------------------------------------------------------

    def _warm_up(self) -> None:
        """Run the claim and the acknowledgement once on their connections, each on a job of
        its own in a transaction rolled back, before the worker counts as started: their
        backends parse and plan those statements, and their triggers', and fill their caches
        on the first runs, which a fresh worker otherwise paid for in its first burst of jobs.
        With one claim turn that cost is paid in line: sixteen fresh workers woken by one
        announcement claim one after another, and each claim holds the turn while the other
        fifteen backends' first acknowledgements and claims take the CPU from it (on two
        cores, 10 ms a turn for a claim of 8 jobs against 1 alone), so the first tenth of a
        20,000-job drain came 110-180 ms later than with four, and warm workers did not lag
        (benchmarks/FLEET.md). A warm-up that fails (an outage, a lock held past a second)
        leaves the worker as cold as before, nothing worse."""
        for what, warm in (
            ("claim", self.producer.store.warm_up_claim),
            ("acknowledgement", self.completer.acks.warm_up_acknowledge),
        ):
            try:
                warm(self.id)
            except psycopg.Error as exc:
                log.info("worker %s: warming up the %s failed (%s); going on", self.id, what, exc)

    def _close_pools(self) -> None:
        for pool in (self._claim_pool, self._ack_pool, self.pool):
            pool.close(timeout=5)

    def _fail_fatally(self, reason: str) -> None:
        if self._fatal is None:
            self._fatal = reason
            log.error("%s", reason)
        self.stop()

    def _sync_schedules(self) -> None:
        with self.pool.connection() as conn:
            synced = sync_schedules(conn, SCHEDULES, stages=REGISTRY)
        if synced.upserted or synced.removed:
            log.info("schedules from code: %s synced, %s removed", synced.upserted, synced.removed)

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
