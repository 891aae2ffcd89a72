"""Jobs as operators see and steer them: list, show, retry and cancel, one or in bulk.

Every function takes `tenant`. When it is set, every statement matches it: a caller scoped to
one tenant cannot read or change another tenant's job, which to it does not exist. Bulk
changes run in batches, one short transaction each, so that they never hold many row locks
for long against the workers claiming and settling the same table. `conn` is an autocommit
connection (pipeline.connect()).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from pipeline.queries import Q

BULK_BATCH = 500  #: jobs changed per transaction by a bulk retry or cancel
CHILDREN_SHOWN = 100  #: child ids `show` returns at most (a fan-out can have thousands)


@dataclass(frozen=True)
class JobFilter:
    """Which jobs to list; None matches any."""

    status: str | None = None
    stage: str | None = None
    tenant: str | None = None
    #: created at most this many seconds ago
    since_s: float | None = None


@dataclass(frozen=True)
class JobSummary:
    id: int
    type: str
    tenant_id: str | None
    status: str
    attempts: int
    max_attempts: int
    created_at: datetime
    finished_at: datetime | None
    last_error: str | None


@dataclass(frozen=True)
class Timeline:
    created_at: datetime
    #: when it may run (next): a retry's backoff or an enqueue's delay
    run_after: datetime
    #: the latest claim's start
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class JobDetail:
    id: int
    type: str
    tenant_id: str | None
    status: str
    priority: int
    payload: Any
    attempts: int
    max_attempts: int
    claims: int
    last_error: str | None
    #: the run: its root job's id (this job's own for a root)
    run_id: int
    parent_id: int | None
    #: the first CHILDREN_SHOWN ids of the jobs it enqueued, of children_total
    children: list[int]
    children_total: int
    timeline: Timeline
    join_id: int | None
    dedup_key: str | None
    lease_seconds: int
    leased_until: datetime | None
    worker_id: Any
    suspect: bool
    crash_reclaims: int
    releases: int


class Change(enum.Enum):
    """What a retry or cancel of one job did."""

    DONE = "done"
    MISSING = "missing"  #: no such job (for this tenant)
    REFUSED = "refused"  #: the job is not in a state the change applies to


def list_jobs(
    conn: psycopg.Connection[Any],
    where: JobFilter,
    *,
    limit: int,
    before: int | None = None,
) -> list[JobSummary]:
    """The newest `limit` jobs that match, newest first; `before`: only ids below it (the
    smallest id of the previous page)."""
    rows = conn.execute(
        Q["jobs_list"],
        {
            "status": where.status,
            "stage": where.stage,
            "tenant": where.tenant,
            "since_s": where.since_s,
            "before": before,
            "limit": limit,
        },
    ).fetchall()
    return [JobSummary(*row) for row in rows]


def get_job(
    conn: psycopg.Connection[Any], job_id: int, *, tenant: str | None = None
) -> JobDetail | None:
    cur = conn.execute(Q["job_get"], {"id": job_id, "tenant": tenant})
    row = cur.fetchone()
    if row is None:
        return None
    fields = dict(zip([d.name for d in cur.description or []], row, strict=True))
    timeline = Timeline(**{name: fields.pop(name) for name in _TIMELINE})
    [(total, children)] = conn.execute(
        Q["job_children"], {"id": job_id, "tenant": tenant, "limit": CHILDREN_SHOWN}
    ).fetchall()
    return JobDetail(**fields, children=list(children), children_total=total, timeline=timeline)


_TIMELINE = ("created_at", "run_after", "started_at", "finished_at")


def _exists(conn: psycopg.Connection[Any], job_id: int, tenant: str | None) -> bool:
    # The tenant check of a change by id. A job's tenant never changes once it is enqueued
    # (no statement sets tenant_id), so a change by id that follows it is scoped as well.
    return conn.execute(Q["job_get"], {"id": job_id, "tenant": tenant}).fetchone() is not None


def _wake(conn: psycopg.Connection[Any], types: Sequence[str]) -> None:
    # Requeued by an UPDATE, which the insert trigger does not see: tell idle workers here
    # rather than leave the jobs to their next poll.
    if types:
        conn.execute(Q["notify_ready"], {"types": sorted(set(types))})


def retry_job(conn: psycopg.Connection[Any], job_id: int, *, tenant: str | None = None) -> Change:
    """A failed or cancelled job back in the queue, with one more attempt if it had none left."""
    if not _exists(conn, job_id, tenant):
        return Change.MISSING
    rows = conn.execute(Q["retry"], {"id": job_id}).fetchall()
    if not rows:
        return Change.REFUSED
    _wake(conn, [job_type for _, job_type in rows])
    return Change.DONE


def retry_failed(
    conn: psycopg.Connection[Any],
    *,
    stage: str | None = None,
    tenant: str | None = None,
    batch: int = BULK_BATCH,
) -> int:
    """Every failed job (of `stage`, of `tenant`) back in the queue, `batch` per transaction;
    returns how many. Each is retried once, even if it fails again before this returns."""
    after, total = 0, 0
    while True:
        rows = conn.execute(
            Q["jobs_retry_failed"],
            {"after": after, "stage": stage, "tenant": tenant, "batch": batch},
        ).fetchall()
        _wake(conn, [job_type for _, job_type in rows])
        total += len(rows)
        if len(rows) < batch:
            return total
        after = max(job_id for job_id, _ in rows)


def cancel_job(
    conn: psycopg.Connection[Any],
    job_id: int,
    *,
    tenant: str | None = None,
    reason: str | None = None,
) -> Change:
    """Cancel a queued job, or a running one: its worker is told (NOTIFY) and stops it, and
    whatever it still writes fails the fence."""
    if not _exists(conn, job_id, tenant):
        return Change.MISSING
    if not conn.execute(Q["cancel"], {"id": job_id, "reason": reason}).fetchall():
        return Change.REFUSED
    return Change.DONE


def cancel_queued(
    conn: psycopg.Connection[Any],
    stage: str,
    *,
    tenant: str | None = None,
    reason: str | None = None,
    batch: int = BULK_BATCH,
) -> int:
    """Cancel the queued jobs of `stage` (of `tenant`) that exist when it starts, `batch` per
    transaction; returns how many. Running jobs are left alone: cancel those by id."""
    [(upto,)] = conn.execute(Q["jobs_max_id"]).fetchall()
    total = 0
    while True:
        rows = conn.execute(
            Q["jobs_cancel_queued"],
            {"stage": stage, "tenant": tenant, "reason": reason, "upto": upto, "batch": batch},
        ).fetchall()
        # Until a batch finds nothing: a short one may only mean rows were locked (being
        # claimed), and the next batch no longer sees those as queued.
        if not rows:
            return total
        total += len(rows)
