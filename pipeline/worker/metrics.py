"""This worker's Prometheus metrics and its /metrics endpoint (`pipeline worker --metrics-port P`).

What the endpoint serves, and how N workers scraped side by side stay meaningful:

* **Per-worker counters and histograms** (`pipeline_worker_*`), kept here: jobs settled by stage
  and result, claim and acknowledgement latency. They carry a `worker` label (the worker's id),
  so `sum()` across workers is the fleet's total. A restarted worker has a new id and starts its
  series from zero, as Prometheus expects of a restarted process.
* **Job durations** (`pipeline_job_duration_seconds{stage,result}`): how long each run of a
  stage took, by how it ended (pipeline/worker/job_executor.py RUN_RESULTS): the stage's own
  time, from a runner taking the job to the run's end, without the write that settles it.
* **Process metrics** (`process_*`: CPU, resident memory, open files), prometheus_client's.
* **Queue-wide gauges** (`pipeline_jobs_*`, `pipeline_tenant_*`, ...), which describe the queue,
  not this worker: read through the operators' read model when Prometheus scrapes, by
  pipeline/admin/metrics.py, which says how to aggregate them.

Each WorkerMetrics has a registry of its own (nothing goes to prometheus_client's global
one), so one process can hold several, as the tests do.
"""

from __future__ import annotations

import logging
import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    start_http_server,
)
from psycopg_pool import ConnectionPool

from pg_pipeline.admin.metrics import CACHE_S, TOP_STAGES, TOP_TENANTS, QueueCollector
from pg_pipeline.usage import Usage

log = logging.getLogger(__name__)

#: What the completer confirmed (pipeline/worker/completer.py Settled, "batched" aside) and the
#: `result` label it is counted under.
RESULTS = {
    "done": "completed",
    "queued": "retried",  # back in the queue for another run
    "failed": "failed",
    "lost": "lost",  # the fence did not hold: cancelled, retried or reclaimed since
    "waiting": "waiting",  # waits for a signal or its deadline (ctx.wait_for)
    "unknown": "unknown",  # the database stayed unreachable; reclaim decides
}

# A claim or an acknowledgement is one statement: milliseconds when all is well, seconds when
# the database is struggling, and up to a lease when it is down and the write is retried.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# A job runs from a millisecond (a no-op) to an hour (OCR of a long document).
DURATION_BUCKETS = (
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
    300.0, 600.0, 1800.0, 3600.0,
)  # fmt: skip


class WorkerMetrics:
    """One worker's metrics and, once `serve` is called, its /metrics endpoint."""

    def __init__(
        self,
        worker: str,
        *,
        cache_s: float = CACHE_S,
        top_stages: int = TOP_STAGES,
        top_tenants: int = TOP_TENANTS,
    ) -> None:
        self.worker = worker
        self.registry = CollectorRegistry()
        self._cache_s, self._top_stages, self._top_tenants = cache_s, top_stages, top_tenants
        self.collector: QueueCollector | None = None
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None
        self._settled = Counter(
            "pipeline_worker_jobs_settled",
            "Jobs this worker settled, by stage and result "
            "(completed, retried, failed, lost, unknown).",
            ["worker", "stage", "result"],
            registry=self.registry,
        )
        self._claimed = Counter(
            "pipeline_worker_jobs_claimed",
            "Jobs this worker claimed.",
            ["worker"],
            registry=self.registry,
        )
        self._claim_seconds = Histogram(
            "pipeline_worker_claim_seconds",
            "Time one claim statement took, empty claims included.",
            ["worker"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._acknowledged = Counter(
            "pipeline_worker_jobs_acknowledged",
            "Completions this worker wrote in acknowledgement batches.",
            ["worker"],
            registry=self.registry,
        )
        self._ack_seconds = Histogram(
            "pipeline_worker_ack_seconds",
            "Time one acknowledgement write took (a batch of completions).",
            ["worker"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )

        self._duration = Histogram(
            "pipeline_job_duration_seconds",
            "Time one run of a job took, by stage and how the run ended (completed, retried, "
            "failed, given_back, lost, unknown, abandoned).",
            ["stage", "result"],
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self._usage = Counter(
            "pipeline_usage",
            "What the runs this worker ran consumed, by stage and counter: wall_s and cpu_s as "
            "measured, and every number stages reported with ctx.usage (docs/usage.md).",
            ["stage", "counter"],
            registry=self.registry,
        )
        ProcessCollector(registry=self.registry)

    def ran(self, stage: str, result: str, seconds: float) -> None:
        """One run of a job of `stage` took `seconds` and ended as `result`."""
        self._duration.labels(stage, result).observe(seconds)

    def used(self, stage: str, usage: Usage) -> None:
        """What one run of `stage` consumed. Its labels are bounded by the code: the stages and
        the counter names their code reports."""
        wall_s, cpu_s, counters = usage.measures()
        if wall_s is not None:
            self._usage.labels(stage, "wall_s").inc(wall_s)
        if cpu_s is not None:
            self._usage.labels(stage, "cpu_s").inc(cpu_s)
        for counter, value in (counters or {}).items():
            if isinstance(value, float):
                self._usage.labels(stage, counter).inc(value)

    def settled(self, stage: str, result: str) -> None:
        """A job's settling is over; result is one of "done", "queued", "failed", "lost",
        "unknown" (anything else is a ValueError: an unbounded label would be worse)."""
        label = RESULTS.get(result)
        if label is None:
            raise ValueError(f"unknown settle result {result!r}; expected one of {list(RESULTS)}")
        self._settled.labels(self.worker, stage, label).inc()

    def claimed(self, count: int, seconds: float) -> None:
        """One claim statement took `count` jobs (0 too) in `seconds`."""
        self._claimed.labels(self.worker).inc(count)
        self._claim_seconds.labels(self.worker).observe(seconds)

    def acknowledged(self, count: int, seconds: float) -> None:
        """One acknowledgement write confirmed `count` completions in `seconds`."""
        self._acknowledged.labels(self.worker).inc(count)
        self._ack_seconds.labels(self.worker).observe(seconds)

    def serve(self, port: int, pool: ConnectionPool, *, addr: str = "127.0.0.1") -> None:
        """Serve /metrics on `port` (0: a free one, see `port`) from a daemon thread; the queue
        gauges read through `pool`. Raises OSError when the port cannot be bound."""
        if self._server is not None:
            raise RuntimeError("WorkerMetrics.serve was called twice")
        self.collector = QueueCollector(
            pool,
            cache_s=self._cache_s,
            top_stages=self._top_stages,
            top_tenants=self._top_tenants,
        )
        self.registry.register(self.collector)
        try:
            self._server, self._thread = start_http_server(port, addr, registry=self.registry)
        except BaseException:
            self.registry.unregister(self.collector)
            self.collector = None
            raise
        log.info("metrics: serving http://%s:%d/metrics", addr, self.port)

    @property
    def port(self) -> int | None:
        """The port /metrics is served on, once `serve` has bound it."""
        return None if self._server is None else int(self._server.server_address[1])

    def close(self) -> None:
        """Stop serving; counting goes on. Safe to call more than once."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        if self.collector is not None:
            self.registry.unregister(self.collector)
            self.collector = None

    def __enter__(self) -> WorkerMetrics:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
