"""The queue's figures as operators read them: one consistent snapshot of the monitoring views
(sql/migrations/0006_monitoring.sql), typed, for `pipeline status` and the metrics collector.

Windows are fixed by the views: failures, attempts and completions over the last hour and day,
durations over the last hour. Finished jobs are only ever read through such a window, so a
snapshot costs the same with ten finished rows or ten million.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg

from pipeline.queries import Q

#: A snapshot that takes longer than this is cancelled by the server, not waited for.
SNAPSHOT_TIMEOUT_MS = 5_000
#: Expired-lease rows a snapshot lists (the count per stage is exact whatever this is).
EXPIRED_LIMIT = 20
#: (tenant, stage) rows a snapshot lists, closest to its cap first.
TENANT_LIMIT = 50
#: Schedules a snapshot lists, soonest first.
SCHEDULE_LIMIT = 50
#: Share of its cap in use from which a capped tenant counts as near its cap.
NEAR_CAP = 0.8


@dataclass(frozen=True)
class StageStatus:
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


@dataclass(frozen=True)
class FailureHour:
    stage: str
    hour: datetime  #: the clock hour's start
    failed: int


@dataclass(frozen=True)
class ExpiredLease:
    id: int
    stage: str
    tenant_id: str | None
    worker_id: UUID | None
    attempts: int
    max_attempts: int
    leased_until: datetime
    expired_for_s: float


@dataclass(frozen=True)
class TenantCapUse:
    tenant_id: str
    stage: str
    running: int  #: jobs holding one of the pair's slots
    #: the operator's cap (tenant_caps); None when a default from the workers' code applies,
    #: which the database does not hold
    cap: int | None
    queued: int

    @property
    def near_cap(self) -> bool:
        """At or past NEAR_CAP of a cap the database knows (a cap of 0 pauses: always)."""
        return self.cap is not None and self.running >= self.cap * NEAR_CAP


@dataclass(frozen=True)
class TenantRunning:
    """Running jobs of the busiest (tenant, stage) pairs, the rest summed per stage: a label
    set of bounded size, for the metrics."""

    tenant_id: str | None  #: None: the pairs past the top ones, summed
    stage: str
    running: int
    cap: int | None  #: a named pair's cap from tenant_caps; never a sum's


@dataclass(frozen=True)
class WorkerStatus:
    id: UUID
    hostname: str
    pid: int
    stages: list[str]
    concurrency: int
    started_at: datetime
    last_seen: datetime  #: its last heartbeat
    seen_ago_s: float
    in_flight: int  #: running jobs it holds


@dataclass(frozen=True)
class ScheduleStatus:
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
    workers: list[WorkerStatus]
    schedules: list[ScheduleStatus]
    schedules_total: int
    #: Caps that live in code are not in the database, so `tenants` cannot show them.
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready object whose keys are a stable interface for scripts: times in ISO 8601,
        durations in seconds, ids as strings. New keys may be added; none renamed or removed."""
        shaped: dict[str, Any] = _jsonable(
            {
                "version": 1,
                "taken_at": self.taken_at,
                "stages": [asdict(s) for s in self.stages],
                "failures_hourly": [asdict(f) for f in self.failures_hourly],
                "expired_leases": {
                    "total": self.expired_leases_total,
                    "oldest": [asdict(e) for e in self.expired_leases],
                },
                "tenants": {
                    "total": self.tenants_total,
                    "rows": [asdict(t) | {"near_cap": t.near_cap} for t in self.tenants],
                },
                "workers": [asdict(w) for w in self.workers],
                "schedules": {
                    "total": self.schedules_total,
                    "rows": [asdict(s) for s in self.schedules],
                },
                "notes": self.notes,
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


def read_stages(conn: psycopg.Connection[Any]) -> list[StageStatus]:
    return [StageStatus(*row) for row in conn.execute(Q["monitoring_stages"]).fetchall()]


def read_workers(conn: psycopg.Connection[Any]) -> list[WorkerStatus]:
    return [WorkerStatus(*row) for row in conn.execute(Q["monitoring_workers"]).fetchall()]


def read_schedules(conn: psycopg.Connection[Any], limit: int) -> tuple[list[ScheduleStatus], int]:
    """The first `limit` schedules, soonest first, and how many there are in all."""
    rows = conn.execute(Q["monitoring_schedules"], {"limit": limit}).fetchall()
    return [ScheduleStatus(*row[:-1]) for row in rows], (rows[0][-1] if rows else 0)


def read_tenants_running(conn: psycopg.Connection[Any], top: int) -> list[TenantRunning]:
    """The `top` (tenant, stage) pairs by running jobs by name, the rest summed per stage."""
    rows = conn.execute(Q["metrics_tenant_load"], {"top": top}).fetchall()
    return [TenantRunning(t, stage, int(running), cap) for t, stage, running, cap in rows]


def read_status(
    conn: psycopg.Connection[Any],
    *,
    expired_limit: int = EXPIRED_LIMIT,
    tenant_limit: int = TENANT_LIMIT,
    schedule_limit: int = SCHEDULE_LIMIT,
    timeout_ms: int = SNAPSHOT_TIMEOUT_MS,
) -> Status:
    with conn.transaction():
        taken_at = begin_snapshot(conn, timeout_ms)
        stages = read_stages(conn)
        failures = [
            FailureHour(*row) for row in conn.execute(Q["monitoring_failures_hourly"]).fetchall()
        ]
        expired_rows = conn.execute(
            Q["monitoring_expired_leases"], {"limit": expired_limit}
        ).fetchall()
        tenant_rows = conn.execute(Q["monitoring_tenant_load"], {"limit": tenant_limit}).fetchall()
        workers = read_workers(conn)
        schedules, schedules_total = read_schedules(conn, schedule_limit)
    tenants = [TenantCapUse(*row[:-1]) for row in tenant_rows]
    return Status(
        taken_at=taken_at,
        stages=stages,
        failures_hourly=failures,
        expired_leases=[ExpiredLease(*row[:-1]) for row in expired_rows],
        expired_leases_total=expired_rows[0][-1] if expired_rows else 0,
        tenants=tenants,
        tenants_total=tenant_rows[0][-1] if tenant_rows else 0,
        workers=workers,
        schedules=schedules,
        schedules_total=schedules_total,
        notes=[CAP_NOTE] if any(t.cap is None for t in tenants) else [],
    )


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
