"""The queue's figures as operators read them: one consistent snapshot of the monitoring views
(sql/migrations/0006_monitoring.sql), typed. The one read model of `pipeline status`, the
dashboard's overview and the metrics collector (pipeline/admin/metrics.py).

Every read takes `tenant`: None for the whole queue, else that tenant's figures alone, in
every statement (a dashboard opened with a tenant's token reads through it). Workers serve
every tenant, so a read scoped to one lists none.

Windows are fixed by the views: failures, attempts and completions over the last hour and day,
durations over the last hour, in whole minutes. Finished jobs are counted from their minutes'
rollups (pipeline.finished_by_minute, per tenant pipeline.tenant_finished_by_minute), which the
statement that moves a job into the history keeps, never read from the history: a snapshot
costs the same with ten finished jobs a day or a million, and ten finished rows or a hundred
million. Run-time percentiles are estimates from the rollups' histograms (within 13%).

The rows are NamedTuples rather than frozen dataclasses: a frozen dataclass compiles six
methods when its class is made, and these rows' classes made `pipeline status` start some
7 ms later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, LiteralString, NamedTuple, TypeVar
from uuid import UUID

import psycopg

from pg_pipeline.admin.limits import LimitUse, limit_rows
from pg_pipeline.queries import Q
from pg_pipeline.vocabulary import RUN_STATUSES

T = TypeVar("T")

#: A snapshot that takes longer than this is cancelled by the server, not waited for.
SNAPSHOT_TIMEOUT_MS = 5_000
#: Expired-lease rows a snapshot lists (the count per stage is exact whatever this is).
EXPIRED_LIMIT = 20
#: (tenant, stage) rows a snapshot lists, closest to its cap first.
TENANT_LIMIT = 50
#: Budgets a snapshot lists, exhausted and warning ones first.
BUDGET_LIMIT = 50
#: Tenant weights a snapshot lists, by tenant.
WEIGHT_LIMIT = 50
#: Schedules a snapshot lists, soonest first.
SCHEDULE_LIMIT = 50
#: Share of its cap in use from which a capped tenant counts as near its cap.
NEAR_CAP = 0.8
#: (stage, running jobs) rows read_worker_stages returns at most, over every worker asked about.
WORKER_STAGES_LIMIT = 500


class StageStatus(NamedTuple):
    stage: str
    queued: int  #: every queued job, ready or waiting for its run_after
    ready: int  #: queued jobs whose run_after has come
    running: int
    expired_leases: int  #: running jobs whose lease ran out, not reclaimed yet
    oldest_ready_age_s: float | None  #: None when nothing is ready
    failed_1h: int
    failed_24h: int
    completed_1h: int
    avg_attempts_1h: float | None  #: charged attempts per job completed in the last hour
    max_attempts_1h: int | None
    completed_24h: int
    avg_attempts_24h: float | None
    max_attempts_24h: int | None
    p50_s: float | None  #: run time of jobs done in the last hour
    p95_s: float | None
    max_s: float | None

    @property
    def load(self) -> int:
        """What a stage has on its plate now: ranks stages for bounded metric labels."""
        return self.queued + self.running


class FailureHour(NamedTuple):
    stage: str
    hour: datetime  #: the clock hour's start
    failed: int


class ExpiredLease(NamedTuple):
    id: int
    stage: str
    tenant_id: str | None
    worker_id: UUID | None
    attempts: int
    max_attempts: int
    leased_until: datetime
    expired_for_s: float


class TenantCapUse(NamedTuple):
    tenant_id: str
    stage: str
    #: the operator's cap (tenant_caps); None when a default from the workers' code applies,
    #: which the database does not hold
    cap: int | None
    running: int  #: jobs holding one of the pair's slots
    queued: int

    @property
    def near_cap(self) -> bool:
        """At or past NEAR_CAP of a cap the database knows (a cap of 0 pauses: always)."""
        return self.cap is not None and self.running >= self.cap * NEAR_CAP


class TenantWeight(NamedTuple):
    """An operator's weight: under contention, a tenant's share of the claims of a stage
    follows it (docs/fairness.md). Tenants without one weigh 1."""

    tenant_id: str
    stage: str | None  #: None: the tenant's weight for every stage without one of its own
    weight: float


class BudgetUse(NamedTuple):
    """A tenant's budget and its use in the current UTC day or month (docs/fairness.md)."""

    tenant_id: str
    stage: str | None  #: None: every stage of the tenant, counted together
    counter: str  #: a usage counter, or "cost": money, by the price table
    per: str  #: "day" or "month"
    limit: float
    warn: float  #: the share of the limit that warns
    used: float
    state: str  #: "ok", "warning" (at warn x limit) or "exhausted" (claims stopped)

    @property
    def alerting(self) -> bool:
        return self.state != "ok"


class TenantRunning(NamedTuple):
    """Running jobs of the busiest (tenant, stage) pairs, the rest summed per stage: a label
    set of bounded size, for the metrics."""

    tenant_id: str | None  #: None: the pairs past the top ones, summed
    stage: str
    running: int
    cap: int | None  #: a named pair's cap from tenant_caps; never a sum's


class WorkerStatus(NamedTuple):
    id: UUID
    hostname: str
    pid: int
    stages: list[str]
    concurrency: int
    started_at: datetime
    last_seen: datetime  #: its last heartbeat
    seen_ago_s: float
    in_flight: int  #: running jobs it holds


class ScheduleStatus(NamedTuple):
    name: str
    stage: str
    tenant_id: str | None
    cron: str | None  #: exactly one of cron and every_s is set
    every_s: float | None
    timezone: str
    paused: bool
    next_fire_at: datetime
    due_in_s: float  #: negative: due, and no scheduler has fired it yet
    last_fired_at: datetime | None
    last_job_id: int | None
    last_error: str | None  #: why the last due fire time enqueued nothing


class Minute(NamedTuple):
    """Jobs that finished within one minute of the last hour."""

    minute: datetime
    done: int
    failed: int


class WaitingStage(NamedTuple):
    """Jobs of a stage waiting for input under one wait name (pg_pipeline.waits)."""

    stage: str
    name: str
    waiting: int
    next_deadline: datetime


#: (stage, wait name) pairs `pipeline status` lists at most
WAITING_LIMIT = 100
#: (limit, key) rows a snapshot lists at most
LIMITS_LIMIT = 100


@dataclass(frozen=True)
class Status:
    """One snapshot, every figure read in the same transaction."""

    taken_at: datetime
    stages: list[StageStatus]
    failures_hourly: list[FailureHour]
    expired_leases: list[ExpiredLease]
    expired_leases_total: int
    tenants: list[TenantCapUse]
    tenants_total: int
    workers: list[WorkerStatus]  #: none when scoped to a tenant: workers serve every tenant
    schedules: list[ScheduleStatus]
    schedules_total: int
    #: Caps that live in code are not in the database, so `tenants` cannot show them.
    notes: list[str] = field(default_factory=list)
    #: the tenant the figures are scoped to; None: the whole queue
    tenant: str | None = None
    #: runs of more than one job by their stored status (pipeline.runs), every status a key
    runs: dict[str, int] = field(default_factory=dict)
    #: jobs waiting for input, by stage and wait name
    waiting: list[WaitingStage] = field(default_factory=list)
    #: rate limits by (limit, key): none when scoped to a tenant (docs/limits.md)
    limits: list[LimitUse] = field(default_factory=list)
    #: operators' weights (every tenant without one weighs 1), and how many there are in all
    weights: list[TenantWeight] = field(default_factory=list)
    weights_total: int = 0
    #: budgets, those past their warning level first, and how many there are in all
    budgets: list[BudgetUse] = field(default_factory=list)
    budgets_total: int = 0

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready object whose keys are a stable interface for scripts: times in ISO 8601,
        durations in seconds, ids as strings. New keys may be added; none renamed or removed."""
        shaped: dict[str, Any] = _jsonable(
            {
                "version": 1,
                "taken_at": self.taken_at,
                "stages": [s._asdict() for s in self.stages],
                "failures_hourly": [f._asdict() for f in self.failures_hourly],
                "expired_leases": {
                    "total": self.expired_leases_total,
                    "oldest": [e._asdict() for e in self.expired_leases],
                },
                "tenants": {
                    "total": self.tenants_total,
                    "rows": [t._asdict() | {"near_cap": t.near_cap} for t in self.tenants],
                },
                "workers": [w._asdict() for w in self.workers],
                "schedules": {
                    "total": self.schedules_total,
                    "rows": [s._asdict() for s in self.schedules],
                },
                "notes": self.notes,
                "runs": self.runs,
                "waiting": [w._asdict() for w in self.waiting],
                "limits": [r._asdict() | {"full": r.full} for r in self.limits],
                "weights": {
                    "total": self.weights_total,
                    "rows": [w._asdict() for w in self.weights],
                },
                "budgets": {
                    "total": self.budgets_total,
                    "rows": [b._asdict() for b in self.budgets],
                },
            }
        )
        return shaped


CAP_NOTE = (
    "tenants: cap is null where a default from the workers' code applies "
    "(@stage(tenant_cap=) or `pipeline worker --tenant-cap`); the database does not hold it"
)


def begin_snapshot(
    conn: psycopg.Connection[Any], timeout_ms: int = SNAPSHOT_TIMEOUT_MS
) -> datetime:
    """First thing in the snapshot's transaction: one consistent, read-only view of the data,
    every statement bounded by timeout_ms. Returns the snapshot's time."""
    conn.execute(Q["monitoring_snapshot"])
    row = conn.execute(Q["monitoring_begin"], {"timeout_ms": str(timeout_ms)}).fetchone()
    return row[1] if row else datetime.now().astimezone()


def read_stages(conn: psycopg.Connection[Any], tenant: str | None = None) -> list[StageStatus]:
    """Every stage with anything queued or running, or failed or done within the day."""
    rows = _by_view(conn, Q["monitoring_stages"], Q["monitoring_tenant_stages"], tenant)
    return [StageStatus(*row) for row in rows]


def read_failures_hourly(
    conn: psycopg.Connection[Any], tenant: str | None = None
) -> list[FailureHour]:
    whole, scoped = Q["monitoring_failures_hourly"], Q["monitoring_tenant_failures_hourly"]
    return [FailureHour(*row) for row in _by_view(conn, whole, scoped, tenant)]


def read_expired_leases(
    conn: psycopg.Connection[Any], limit: int, tenant: str | None = None
) -> tuple[list[ExpiredLease], int]:
    """The `limit` longest expired leases, and how many there are in all."""
    params = {"limit": limit, "tenant": tenant}
    return _counted(conn.execute(Q["monitoring_expired_leases"], params), ExpiredLease)


def read_cap_use(
    conn: psycopg.Connection[Any], limit: int, tenant: str | None = None
) -> tuple[list[TenantCapUse], int]:
    """The `limit` capped (tenant, stage) pairs closest to their cap, and how many in all."""
    params = {"limit": limit, "tenant": tenant}
    return _counted(conn.execute(Q["monitoring_tenant_load"], params), TenantCapUse)


def read_weights(
    conn: psycopg.Connection[Any], limit: int, tenant: str | None = None
) -> tuple[list[TenantWeight], int]:
    """The first `limit` weights operators set, by tenant, and how many there are in all."""
    params = {"limit": limit, "tenant": tenant}
    return _counted(conn.execute(Q["tenant_weights"], params), TenantWeight)


def read_budgets(
    conn: psycopg.Connection[Any], limit: int, tenant: str | None = None
) -> tuple[list[BudgetUse], int]:
    """The first `limit` budgets, exhausted and warning ones first, with their use now, and how
    many there are in all."""
    params = {"limit": limit, "tenant": tenant}
    return _counted(conn.execute(Q["budgets"], params), BudgetUse)


def read_workers(conn: psycopg.Connection[Any]) -> list[WorkerStatus]:
    """Every live worker (workers serve every tenant: no scope)."""
    return [WorkerStatus(*row) for row in conn.execute(Q["monitoring_workers"]).fetchall()]


def read_worker_stages(
    conn: psycopg.Connection[Any], workers: list[UUID]
) -> dict[UUID, list[tuple[str, int]]]:
    """What each of `workers` runs now: (stage, running jobs) per worker."""
    found: dict[UUID, list[tuple[str, int]]] = {}
    if not workers:
        return found
    rows = conn.execute(
        Q["monitoring_worker_stages"], {"workers": workers, "limit": WORKER_STAGES_LIMIT}
    ).fetchall()
    for worker_id, stage, running in rows:
        found.setdefault(worker_id, []).append((stage, int(running)))
    return found


def read_schedules(
    conn: psycopg.Connection[Any], limit: int, tenant: str | None = None
) -> tuple[list[ScheduleStatus], int]:
    """The first `limit` schedules, soonest first, and how many there are in all."""
    params = {"limit": limit, "tenant": tenant}
    return _counted(conn.execute(Q["monitoring_schedules"], params), ScheduleStatus)


def read_throughput(conn: psycopg.Connection[Any], tenant: str | None = None) -> list[Minute]:
    """Jobs done and failed per minute over the last hour; minutes without any have no row."""
    rows = conn.execute(Q["monitoring_throughput"], {"tenant": tenant}).fetchall()
    return [Minute(*row) for row in rows]


def read_tenants_running(conn: psycopg.Connection[Any], top: int) -> list[TenantRunning]:
    """The `top` (tenant, stage) pairs by running jobs by name, the rest summed per stage."""
    rows = conn.execute(Q["metrics_tenant_load"], {"top": top}).fetchall()
    return [TenantRunning(t, stage, int(running), cap) for t, stage, running, cap in rows]


def snapshot_status(
    conn: psycopg.Connection[Any],
    taken_at: datetime,
    *,
    tenant: str | None = None,
    expired_limit: int = EXPIRED_LIMIT,
    tenant_limit: int = TENANT_LIMIT,
    schedule_limit: int = SCHEDULE_LIMIT,
) -> Status:
    """The Status within a snapshot the caller began (begin_snapshot returned `taken_at`), for a
    caller that reads more in the same snapshot; read_status otherwise."""
    expired, expired_total = read_expired_leases(conn, expired_limit, tenant)
    tenants, tenants_total = read_cap_use(conn, tenant_limit, tenant)
    schedules, schedules_total = read_schedules(conn, schedule_limit, tenant)
    weights, weights_total = read_weights(conn, WEIGHT_LIMIT, tenant)
    budgets, budgets_total = read_budgets(conn, BUDGET_LIMIT, tenant)
    return Status(
        taken_at=taken_at,
        stages=read_stages(conn, tenant),
        failures_hourly=read_failures_hourly(conn, tenant),
        expired_leases=expired,
        expired_leases_total=expired_total,
        tenants=tenants,
        tenants_total=tenants_total,
        workers=read_workers(conn) if tenant is None else [],
        schedules=schedules,
        schedules_total=schedules_total,
        notes=[CAP_NOTE] if any(t.cap is None for t in tenants) else [],
        tenant=tenant,
        runs=runs_by_status(conn, tenant),
        waiting=read_waiting(conn, tenant),
        limits=limit_rows(conn, limit=LIMITS_LIMIT) if tenant is None else [],
        weights=weights,
        weights_total=weights_total,
        budgets=budgets,
        budgets_total=budgets_total,
    )


def runs_by_status(conn: psycopg.Connection[Any], tenant: str | None) -> dict[str, int]:
    """How many runs (of more than one job) are in each status; every status is a key."""
    # Here rather than with the runs' pages (admin/runs.py, which imports admin/jobs.py): the
    # snapshot imports neither, and `pipeline status` starts that much sooner.
    found = dict.fromkeys(RUN_STATUSES, 0)
    for status, n in conn.execute(Q["runs_by_status"], {"tenant": tenant}).fetchall():
        found[str(status)] = int(n)
    return found


def read_waiting(conn: psycopg.Connection[Any], tenant: str | None = None) -> list[WaitingStage]:
    """Open waits by (stage, wait name), with the nearest deadline of each."""
    params = {"tenant": tenant, "limit": WAITING_LIMIT}
    rows = conn.execute(Q["monitoring_waiting"], params).fetchall()
    return [WaitingStage(stage, name, int(n), deadline) for stage, name, n, deadline in rows]


def read_status(
    conn: psycopg.Connection[Any],
    *,
    tenant: str | None = None,
    expired_limit: int = EXPIRED_LIMIT,
    tenant_limit: int = TENANT_LIMIT,
    schedule_limit: int = SCHEDULE_LIMIT,
    timeout_ms: int = SNAPSHOT_TIMEOUT_MS,
) -> Status:
    """One snapshot of the queue's figures (of `tenant`'s alone, when set)."""
    with conn.transaction():
        taken_at = begin_snapshot(conn, timeout_ms)
        return snapshot_status(
            conn,
            taken_at,
            tenant=tenant,
            expired_limit=expired_limit,
            tenant_limit=tenant_limit,
            schedule_limit=schedule_limit,
        )


def _by_view(
    conn: psycopg.Connection[Any], whole: LiteralString, scoped: LiteralString, tenant: str | None
) -> list[tuple[Any, ...]]:
    # The views count every tenant together: for one tenant, `scoped` spells a view's figures
    # over that tenant's jobs (sql/queries_monitoring.sql), and a test holds the two equal.
    if tenant is None:
        return conn.execute(whole).fetchall()
    return conn.execute(scoped, {"tenant": tenant}).fetchall()


def _counted(cur: psycopg.Cursor[Any], row: Callable[..., T]) -> tuple[list[T], int]:
    """The rows of a query whose last column counts every match, past its LIMIT too."""
    rows = cur.fetchall()
    return [row(*r[:-1]) for r in rows], (rows[0][-1] if rows else 0)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    return value
