"""The queue's figures as Prometheus gauges: what a worker's /metrics (pipeline/worker/metrics.py)
serves besides its own counters, read through the operators' read model (pipeline/admin/status.py)
as `pipeline status` and the dashboard read it.

The gauges (`pipeline_jobs_*`, `pipeline_oldest_ready_age_seconds`, `pipeline_tenant_*`,
`pipeline_workers_*`, ...) are read when Prometheus scrapes, at most once per `cache_s` per
worker (concurrent scrapes share one read), each read bounded by a statement timeout. They
describe the queue, not the worker that serves them, so they carry no `worker` label and every
worker reports the same values (give or take the cache): aggregate them with `max()` (or pick
any one instance), never `sum()`. Their label sets are bounded: the `top_stages` stages with the
most queued + running jobs keep their name and the rest are summed as stage="other"; the
`top_tenants` (tenant, stage) pairs with the most running jobs keep theirs and the rest are
summed as tenant="other" (a stage or tenant really named "other" shares those series). When
the database cannot be read, `pipeline_queue_metrics_up` is 0 and the other queue gauges are
left out, so a dashboard shows a gap rather than zeros.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from psycopg_pool import ConnectionPool

from pg_pipeline.admin.limits import LimitUse, limit_rows
from pg_pipeline.admin.status import (
    LIMITS_LIMIT,
    BudgetUse,
    StageStatus,
    TenantRunning,
    TenantWeight,
    WorkerStatus,
    begin_snapshot,
    read_budgets,
    read_schedules,
    read_stages,
    read_tenants_running,
    read_weights,
    read_workers,
    runs_by_status,
)

log = logging.getLogger(__name__)

#: Seconds a read of the views is reused for: Prometheus servers in HA pairs, or several
#: scrapers, cost the database one read per window, not one each.
CACHE_S = 2.0
#: Stages, and (tenant, stage) pairs, that keep a label value of their own.
TOP_STAGES = 20
TOP_TENANTS = 20
#: A read of the views that takes longer is cancelled by the server and reported as down.
QUERY_TIMEOUT_MS = 2_000
#: How long a scrape waits for a pool connection when every one is busy running jobs.
POOL_WAIT_S = 2.0
OTHER = "other"
#: pipeline_budget_alert's value per budget state
BUDGET_ALERT = {"ok": 0, "warning": 1, "exhausted": 2}


@dataclass(frozen=True)
class _Snapshot:
    stages: list[StageStatus]
    tenants: list[TenantRunning]
    workers: list[WorkerStatus]
    most_overdue_s: float  #: of the unpaused schedules; 0 when none is overdue
    query_s: float
    runs: dict[str, int]  #: runs of more than one job by stored status
    limits: list[LimitUse] = field(default_factory=list)  #: rate limits by (limit, key)
    weights: list[TenantWeight] = field(default_factory=list)  #: the first top_tenants set
    budgets: list[BudgetUse] = field(default_factory=list)  #: exhausted and warning first


class QueueCollector(Collector):
    """The queue-wide gauges, computed from the monitoring views on scrape (see the module)."""

    def __init__(
        self,
        pool: ConnectionPool,
        *,
        cache_s: float = CACHE_S,
        top_stages: int = TOP_STAGES,
        top_tenants: int = TOP_TENANTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pool = pool
        self._cache_s = cache_s
        self._top_stages = top_stages
        self._top_tenants = top_tenants
        self._clock = clock
        self._lock = threading.Lock()  # one read at a time; the others wait and reuse it
        self._cached: tuple[float, _Snapshot | None] | None = None
        self.reads = 0  #: reads of the database so far, for tests and debugging

    def describe(self) -> Iterable[Metric]:
        # The names alone, so a registry can detect clashes without reading the database.
        return [*_families().values(), _up(0), _query_seconds(0.0)]

    def collect(self) -> Iterable[Metric]:
        snapshot = self._snapshot()
        if snapshot is None:
            return [_up(0)]
        families = _families()
        self._fill(families, snapshot)
        return [_up(1), _query_seconds(snapshot.query_s), *families.values()]

    # -- reading ----------------------------------------------------------------------------------

    def _snapshot(self) -> _Snapshot | None:
        with self._lock:
            now = self._clock()
            if self._cached is not None and now - self._cached[0] < self._cache_s:
                return self._cached[1]
            snapshot = self._read()
            # A failed read is cached too: a database in trouble is not asked again at once.
            self._cached = (self._clock(), snapshot)
            return snapshot

    def _read(self) -> _Snapshot | None:
        self.reads += 1
        started = time.monotonic()
        try:
            with self._pool.connection(timeout=POOL_WAIT_S) as conn, conn.transaction():
                begin_snapshot(conn, QUERY_TIMEOUT_MS)
                stages = read_stages(conn)
                tenants = read_tenants_running(conn, self._top_tenants)
                workers = read_workers(conn)
                # Unpaused schedules come first, most overdue first: one row tells.
                soonest, _ = read_schedules(conn, 1)
                runs = runs_by_status(conn, None)
                limits = limit_rows(conn, limit=LIMITS_LIMIT)
                weights, _ = read_weights(conn, self._top_tenants)
                budgets, _ = read_budgets(conn, self._top_tenants)
        except Exception as exc:  # a scrape must answer: the outage shows as up == 0
            log.warning("metrics: cannot read the monitoring views: %s", exc)
            return None
        overdue = [-s.due_in_s for s in soonest if not s.paused and s.due_in_s < 0]
        return _Snapshot(
            stages,
            tenants,
            workers,
            max(overdue, default=0.0),
            time.monotonic() - started,
            runs,
            limits,
            weights,
            budgets,
        )

    # -- shaping --------------------------------------------------------------------------------

    def _fill(self, f: dict[str, GaugeMetricFamily], snapshot: _Snapshot) -> None:
        ranked = sorted(snapshot.stages, key=lambda s: (-s.load, s.stage))
        named = ranked[: self._top_stages]
        rest = ranked[self._top_stages :]
        rows = [*named, *([merge_stages(rest)] if rest else [])]
        for s in rows:
            labels = [s.stage]
            f["queued"].add_metric(labels, s.queued)
            f["ready"].add_metric(labels, s.ready)
            f["running"].add_metric(labels, s.running)
            f["expired"].add_metric(labels, s.expired_leases)
            # 0 when nothing is ready: alerts on "older than X" stay quiet for an empty queue.
            f["oldest"].add_metric(labels, s.oldest_ready_age_s or 0.0)
            for window, failed, completed, avg, most in (
                ("1h", s.failed_1h, s.completed_1h, s.avg_attempts_1h, s.max_attempts_1h),
                ("24h", s.failed_24h, s.completed_24h, s.avg_attempts_24h, s.max_attempts_24h),
            ):
                f["failed"].add_metric([s.stage, window], failed)
                f["completed"].add_metric([s.stage, window], completed)
                if avg is not None and most is not None:
                    f["attempts_avg"].add_metric([s.stage, window], avg)
                    f["attempts_max"].add_metric([s.stage, window], most)
            # Quantiles of different stages cannot be merged: "other" has none.
            for quantile, value in (("0.5", s.p50_s), ("0.95", s.p95_s)):
                if value is not None and s.stage != OTHER:
                    f["duration"].add_metric([s.stage, quantile], value)
        # A capped pair's stage may have no jobs in the views' windows: it keeps its name while
        # the stage label stays within top_stages values.
        shown = {s.stage for s in named}
        for t in sorted(snapshot.tenants, key=lambda t: -t.running):
            if not rest and len(shown) < self._top_stages:
                shown.add(t.stage)
        pairs: dict[tuple[str, str], list[Any]] = {}
        for t in snapshot.tenants:
            tenant = OTHER if t.tenant_id is None else t.tenant_id
            key = (tenant, t.stage if t.stage in shown else OTHER)
            entry = pairs.setdefault(key, [0, t.cap, 0])
            entry[0] += t.running
            entry[2] += 1
        for (tenant, stage), (running, cap, merged) in sorted(pairs.items()):
            f["tenant_running"].add_metric([tenant, stage], running)
            if cap is not None and merged == 1 and tenant != OTHER:
                f["tenant_cap"].add_metric([tenant, stage], cap)
        for w in snapshot.weights:
            f["tenant_weight"].add_metric([w.tenant_id, w.stage or ""], w.weight)
        for b in snapshot.budgets:
            labels = [b.tenant_id, b.stage or "", b.counter, b.per]
            f["budget_used"].add_metric(labels, b.used / b.limit if b.limit else 1.0)
            f["budget_alert"].add_metric(labels, BUDGET_ALERT[b.state])
        f["workers"].add_metric([], len(snapshot.workers))
        f["slots"].add_metric([], sum(w.concurrency for w in snapshot.workers))
        f["in_flight"].add_metric([], sum(w.in_flight for w in snapshot.workers))
        f["overdue"].add_metric([], snapshot.most_overdue_s)
        for status, n in snapshot.runs.items():
            f["runs"].add_metric([status], n)
        for r in snapshot.limits:
            labels = [r.name, r.key]
            f["limit_used"].add_metric(labels, r.used)
            f["limit_waiting"].add_metric(labels, r.waiting)
            if r.capacity is not None:
                f["limit_capacity"].add_metric(labels, r.capacity)


def merge_stages(rest: list[StageStatus]) -> StageStatus:
    """The stages past the top ones as one "other" row: counts summed, ages and maxima the
    largest, averages weighted by completions."""

    def weighted(
        avg: Callable[[StageStatus], float | None], n: Callable[[StageStatus], int]
    ) -> float | None:
        total = sum(n(s) for s in rest if avg(s) is not None)
        if not total:
            return None
        return sum((avg(s) or 0.0) * n(s) for s in rest) / total

    def most(values: Iterable[float | int | None]) -> Any:
        present = [v for v in values if v is not None]
        return max(present) if present else None

    return StageStatus(
        stage=OTHER,
        queued=sum(s.queued for s in rest),
        ready=sum(s.ready for s in rest),
        running=sum(s.running for s in rest),
        expired_leases=sum(s.expired_leases for s in rest),
        oldest_ready_age_s=most(s.oldest_ready_age_s for s in rest),
        failed_1h=sum(s.failed_1h for s in rest),
        failed_24h=sum(s.failed_24h for s in rest),
        completed_1h=sum(s.completed_1h for s in rest),
        avg_attempts_1h=weighted(lambda s: s.avg_attempts_1h, lambda s: s.completed_1h),
        max_attempts_1h=most(s.max_attempts_1h for s in rest),
        completed_24h=sum(s.completed_24h for s in rest),
        avg_attempts_24h=weighted(lambda s: s.avg_attempts_24h, lambda s: s.completed_24h),
        max_attempts_24h=most(s.max_attempts_24h for s in rest),
        p50_s=None,
        p95_s=None,
        max_s=most(s.max_s for s in rest),
    )


def _families() -> dict[str, GaugeMetricFamily]:
    def gauge(name: str, doc: str, *labels: str) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, doc, labels=list(labels))

    return {
        "queued": gauge("pipeline_jobs_queued", "Queued jobs, ready or not yet.", "stage"),
        "ready": gauge("pipeline_jobs_ready", "Queued jobs whose run_after has come.", "stage"),
        "running": gauge("pipeline_jobs_running", "Running jobs.", "stage"),
        "expired": gauge(
            "pipeline_jobs_expired_leases",
            "Running jobs whose lease expired and that no reclaim has returned yet.",
            "stage",
        ),
        "oldest": gauge(
            "pipeline_oldest_ready_age_seconds",
            "Age of the oldest ready job (0 when none is ready).",
            "stage",
        ),
        "failed": gauge(
            "pipeline_jobs_failed_recent",
            "Jobs that failed within the window (1h or 24h).",
            "stage",
            "window",
        ),
        "completed": gauge(
            "pipeline_jobs_completed_recent",
            "Jobs completed within the window (1h or 24h).",
            "stage",
            "window",
        ),
        "attempts_avg": gauge(
            "pipeline_job_attempts_avg",
            "Average charged attempts of the jobs completed within the window.",
            "stage",
            "window",
        ),
        "attempts_max": gauge(
            "pipeline_job_attempts_max",
            "Most charged attempts of a job completed within the window.",
            "stage",
            "window",
        ),
        "duration": gauge(
            "pipeline_job_duration_recent_seconds",
            "Run time quantiles of the jobs done in the last hour.",
            "stage",
            "quantile",
        ),
        "tenant_running": gauge(
            "pipeline_tenant_running",
            "Running jobs holding a tenant's slots, for capped (tenant, stage) pairs.",
            "tenant",
            "stage",
        ),
        "tenant_cap": gauge(
            "pipeline_tenant_cap",
            "An operator's cap from tenant_caps (a default cap in code is not in the database).",
            "tenant",
            "stage",
        ),
        "tenant_weight": gauge(
            "pipeline_tenant_weight",
            "An operator's weight in the fair share (stage empty: every stage of the tenant); "
            "tenants without one weigh 1 and have no series.",
            "tenant",
            "stage",
        ),
        "budget_used": gauge(
            "pipeline_budget_used_ratio",
            "A tenant's budget: its use this UTC day or month over its limit (stage empty: "
            "every stage).",
            "tenant",
            "stage",
            "counter",
            "per",
        ),
        "budget_alert": gauge(
            "pipeline_budget_alert",
            "A tenant's budget: 0 ok, 1 at or past its warning level, 2 exhausted (its claims "
            "stopped).",
            "tenant",
            "stage",
            "counter",
            "per",
        ),
        "workers": gauge("pipeline_workers_live", "Workers with a recent heartbeat."),
        "slots": gauge("pipeline_workers_slots", "Concurrency summed over live workers."),
        "in_flight": gauge("pipeline_workers_in_flight", "Running jobs held by live workers."),
        "runs": gauge(
            "pipeline_runs",
            "Runs of more than one job by their stored status; failed: a job of the run failed "
            "for good, so it cannot end done.",
            "status",
        ),
        "limit_capacity": gauge(
            "pipeline_rate_limit_capacity",
            "Units a rate limit's key may take per window (docs/limits.md).",
            "limit",
            "key",
        ),
        "limit_used": gauge(
            "pipeline_rate_limit_used",
            "Units charged to a rate limit's key in its window now.",
            "limit",
            "key",
        ),
        "limit_waiting": gauge(
            "pipeline_rate_limit_waiting",
            "Queued jobs charged to a rate limit's key.",
            "limit",
            "key",
        ),
        "overdue": gauge(
            "pipeline_schedule_overdue_seconds",
            "How long the most overdue unpaused schedule has been due without firing (0: none).",
        ),
    }


def _up(value: int) -> GaugeMetricFamily:
    return GaugeMetricFamily(
        "pipeline_queue_metrics_up",
        "1 when the last read of the monitoring views succeeded, 0 when it failed.",
        value=value,
    )


def _query_seconds(value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(
        "pipeline_queue_metrics_query_seconds",
        "How long the last read of the monitoring views took.",
        value=value,
    )
