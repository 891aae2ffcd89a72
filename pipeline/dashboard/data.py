"""What each dashboard page reads, typed. pipeline/admin/* where it has the figures already;
the named queries of sql/queries_dashboard.sql for the rest.

Every read takes `tenant`: None for every tenant, else only that tenant's rows, in every
statement.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, LiteralString
from uuid import UUID

import psycopg

from pipeline.admin.jobs import JobSummary
from pipeline.admin.status import ExpiredLease, ScheduleStatus, begin_snapshot, read_status
from pipeline.admin.tenants import TenantLoad, tenant_loads
from pipeline.queries import Q

#: A page's statements are cancelled by the server after this long: a dashboard gives up
#: rather than pile onto a database that is already struggling.
PAGE_TIMEOUT_MS = 5_000
STAGES_SHOWN = 200
EXPIRED_SHOWN = 20
SCHEDULES_SHOWN = 50
TENANTS_SHOWN = 50
#: Jobs of one run a run page reads (a document has at most 2000 pages, and 2 more jobs).
RUN_JOBS_SHOWN = 2100
RUNS_SHOWN = 30
#: Index probes the runs list makes at most, looking for a tenant's runs among others'.
RUN_PROBES = 500
WORKER_JOBS_SHOWN = 500


@dataclass(frozen=True)
class StageRow:
    stage: str
    queued: int
    running: int
    failed_1h: int
    done_1h: int
    oldest_ready_age_s: float | None
    expired_leases: int


@dataclass(frozen=True)
class Minute:
    minute: datetime
    done: int
    failed: int


@dataclass(frozen=True)
class WorkerRow:
    id: UUID
    hostname: str
    pid: int
    stages: list[str]
    concurrency: int
    last_seen: datetime
    seen_ago_s: float
    in_flight: int
    #: (stage, running jobs) it holds now
    running: list[tuple[str, int]] = field(default_factory=list)


@dataclass(frozen=True)
class Overview:
    taken_at: datetime
    stages: list[StageRow]
    throughput: list[Minute]
    expired: list[ExpiredLease]
    expired_total: int
    #: None when opened for one tenant: workers serve every tenant
    workers: list[WorkerRow] | None
    schedules: list[ScheduleStatus]


def begin_read(conn: psycopg.Connection[Any]) -> datetime:
    """First in a page's transaction: one read-only snapshot, each statement bounded."""
    return begin_snapshot(conn, PAGE_TIMEOUT_MS)


def read_overview(conn: psycopg.Connection[Any], tenant: str | None) -> Overview:
    if tenant is None:
        status = read_status(
            conn,
            expired_limit=EXPIRED_SHOWN,
            schedule_limit=SCHEDULES_SHOWN,
            timeout_ms=PAGE_TIMEOUT_MS,
        )
        with conn.transaction():
            begin_read(conn)
            throughput = _throughput(conn, None)
            running = _worker_jobs(conn, [w.id for w in status.workers])
        return Overview(
            taken_at=status.taken_at,
            stages=[
                StageRow(
                    s.stage,
                    s.queued,
                    s.running,
                    s.failed_1h,
                    s.completed_1h,
                    s.oldest_ready_age_s,
                    s.expired_leases,
                )
                for s in status.stages
            ],
            throughput=throughput,
            expired=list(status.expired_leases),
            expired_total=status.expired_leases_total,
            workers=[
                WorkerRow(
                    w.id,
                    w.hostname,
                    w.pid,
                    w.stages,
                    w.concurrency,
                    w.last_seen,
                    w.seen_ago_s,
                    w.in_flight,
                    running.get(w.id, []),
                )
                for w in status.workers
            ],
            schedules=status.schedules,
        )
    with conn.transaction():
        taken_at = begin_read(conn)
        params = {"tenant": tenant}
        stages = [
            StageRow(*row)
            for row in conn.execute(
                Q["dashboard_tenant_stages"], params | {"limit": STAGES_SHOWN}
            ).fetchall()
        ]
        expired = [
            ExpiredLease(*row)
            for row in conn.execute(
                Q["dashboard_tenant_expired"], params | {"limit": EXPIRED_SHOWN}
            ).fetchall()
        ]
        schedules = [
            ScheduleStatus(*row)
            for row in conn.execute(
                Q["dashboard_tenant_schedules"], params | {"limit": SCHEDULES_SHOWN}
            ).fetchall()
        ]
        throughput = _throughput(conn, tenant)
    return Overview(
        taken_at=taken_at,
        stages=stages,
        throughput=throughput,
        expired=expired,
        expired_total=sum(s.expired_leases for s in stages),
        workers=None,
        schedules=schedules,
    )


def _throughput(conn: psycopg.Connection[Any], tenant: str | None) -> list[Minute]:
    rows = conn.execute(Q["dashboard_throughput"], {"tenant": tenant}).fetchall()
    return [Minute(*row) for row in rows]


def _worker_jobs(
    conn: psycopg.Connection[Any], workers: list[UUID]
) -> dict[UUID, list[tuple[str, int]]]:
    found: dict[UUID, list[tuple[str, int]]] = {}
    if not workers:
        return found
    rows = conn.execute(
        Q["dashboard_worker_jobs"], {"workers": workers, "limit": WORKER_JOBS_SHOWN}
    ).fetchall()
    for worker_id, stage, running in rows:
        found.setdefault(worker_id, []).append((stage, int(running)))
    return found


@dataclass(frozen=True)
class JobQuery:
    """The jobs table's filters, checked (pipeline/dashboard/forms.py); None matches any."""

    status: str | None = None
    stage: str | None = None
    tenant: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    #: a substring of last_error, matched case-insensitively
    search: str | None = None
    #: the page of matches just older than this id (the "older" link), or
    before: int | None = None
    #: just newer than this id (the "newer" link); neither: the newest page
    after: int | None = None
    limit: int = 50

    @property
    def windowed(self) -> bool:
        """Whether the text search reads a window of failed and cancelled jobs (any status,
        failed or cancelled); among queued or running jobs their own index bounds it."""
        return self.search is not None and self.status in (None, "failed", "cancelled")


#: Failed and cancelled jobs the text search reads per page at most, newest first.
SEARCH_WINDOW = 10_000


@dataclass(frozen=True)
class Searched:
    """The window a text search read: how many failed or cancelled jobs, and their ids."""

    jobs: int
    low: int | None
    high: int | None
    #: there are failed or cancelled jobs beyond the window, left to the next page
    full: bool


@dataclass(frozen=True)
class JobsPage:
    rows: list[JobSummary]  #: newest first
    #: the `before` of the next older page, or None: there is none
    older: int | None
    #: the `after` of the next newer page, or None: this is the newest
    newer: int | None
    searched: Searched | None = None


def _like(text: str) -> str:
    # The user's text is a substring, not a pattern: its own % and _ match themselves.
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def list_jobs(conn: psycopg.Connection[Any], q: JobQuery) -> JobsPage:
    """A page of jobs, newest first, with the cursors of the pages either side."""
    with conn.transaction():
        begin_read(conn)
        if q.after is None:
            return _older_page(conn, q)
        found = _newer_page(conn, q)
        # Past the newest match: the first page, full, as the "first" link shows it.
        return found if found is not None else _older_page(conn, replace(q, after=None))


def _params(q: JobQuery) -> dict[str, Any]:
    return {
        "status": q.status,
        "stage": q.stage,
        "tenant": q.tenant,
        "since": q.since,
        "until": q.until,
        "search": None if q.search is None else _like(q.search),
        "before": q.before,
        "after": q.after,
        "limit": q.limit + 1,  # one more than shown: is there another page?
        "window": SEARCH_WINDOW,
    }


def _older_page(conn: psycopg.Connection[Any], q: JobQuery) -> JobsPage:
    searched = None
    if q.windowed:
        rows, searched = _search(conn, Q["dashboard_jobs_search"], q)
    else:
        rows = [JobSummary(*r) for r in conn.execute(Q["dashboard_jobs"], _params(q))]
    shown = rows[: q.limit]
    if len(rows) > q.limit:
        older: int | None = shown[-1].id
    elif searched is not None and searched.full:
        older = searched.low  # no more matches in this window: search the next one
    else:
        older = None
    # A page reached through "older" has a newer one: the page it came from. An empty one
    # (its jobs deleted since) links to the jobs from `before` up.
    if q.before is None:
        newer = None
    elif shown:
        newer = shown[0].id
    else:
        newer = q.before - 1 if q.before > 1 else None
    return JobsPage(shown, older, newer, searched)


def _newer_page(conn: psycopg.Connection[Any], q: JobQuery) -> JobsPage | None:
    """The page just newer than q.after, or None when it would be the newest."""
    assert q.after is not None
    searched = None
    if q.windowed:
        rows, searched = _search(conn, Q["dashboard_jobs_search_newer"], q)
    else:
        rows = [JobSummary(*r) for r in conn.execute(Q["dashboard_jobs_newer"], _params(q))]
    if len(rows) > q.limit:
        shown = rows[: q.limit]
        newer: int | None = shown[-1].id
    elif searched is not None and searched.full:
        shown, newer = rows, searched.high
    else:
        return None
    shown.reverse()
    return JobsPage(shown, shown[-1].id if shown else q.after + 1, newer, searched)


def _search(
    conn: psycopg.Connection[Any], query: LiteralString, q: JobQuery
) -> tuple[list[JobSummary], Searched]:
    rows = conn.execute(query, _params(q)).fetchall()
    n, low, high, more = rows[0][-4:]
    found = [JobSummary(*r[:-4]) for r in rows if r[0] is not None]
    return found, Searched(int(n), low, high, full=bool(more))


@dataclass(frozen=True)
class RunSummary:
    id: int
    type: str
    tenant_id: str | None
    status: str
    created_at: datetime
    finished_at: datetime | None
    descendants: int
    done: int
    failed: int


def list_runs(
    conn: psycopg.Connection[Any], tenant: str | None, before: int | None
) -> list[RunSummary]:
    with conn.transaction():
        begin_read(conn)
        rows = conn.execute(
            Q["dashboard_runs"],
            {"tenant": tenant, "before": before, "probes": RUN_PROBES, "limit": RUNS_SHOWN},
        ).fetchall()
    return [RunSummary(*row) for row in rows]


@dataclass(frozen=True)
class RunJob:
    id: int
    type: str
    tenant_id: str | None
    status: str
    attempts: int
    max_attempts: int
    parent_id: int | None
    last_error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class RunStage:
    stage: str
    jobs: list[RunJob]

    @property
    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for job in self.jobs:
            found[job.status] = found.get(job.status, 0) + 1
        return found


@dataclass(frozen=True)
class Extraction:
    """An output that explains itself: fields, and an `evidence` object per field with its
    confidence (what the documents app's extract stage stores)."""

    stage: str
    job_id: int
    #: (field, value, evidence) in the output's order; evidence {} when it gives none
    fields: list[tuple[str, Any, dict[str, Any]]]
    warnings: list[str]


@dataclass(frozen=True)
class Run:
    id: int
    tenant_id: str | None
    root: RunJob
    stages: list[RunStage]
    total: int  #: jobs in the run; more than shown when past RUN_JOBS_SHOWN
    extractions: list[Extraction]
    #: the other single jobs' outputs, as (stage, job id, output)
    outputs: list[tuple[str, int, Any]]


def read_run(
    conn: psycopg.Connection[Any],
    run_id: int,
    tenant: str | None,
    field_order: Callable[[str], Sequence[str] | None] = lambda stage: None,
) -> Run | None:
    """A run as its stages in the order they first appear, or None when there is no such run
    (for this tenant). run_id is the root job's id; a job of the run names its own run.
    field_order(stage): the names of the stage's output fields in the order to show them."""
    with conn.transaction():
        begin_read(conn)
        params = {"run_id": run_id, "tenant": tenant}
        rows = conn.execute(Q["dashboard_run_jobs"], params | {"limit": RUN_JOBS_SHOWN}).fetchall()
        outputs = conn.execute(Q["dashboard_run_outputs"], params | {"limit": 50}).fetchall()
    if not rows or rows[0][0] != run_id:
        return None  # no such job, or not a run's root
    stages: dict[str, list[RunJob]] = {}
    for row in rows:
        job = RunJob(*row[:-1])
        stages.setdefault(job.type, []).append(job)
    root = RunJob(*rows[0][:-1])
    extractions: list[Extraction] = []
    plain: list[tuple[str, int, Any]] = []
    for stage, job_id, output in outputs:
        found = _extraction(stage, job_id, output, field_order(stage))
        if found is not None:
            extractions.append(found)
        else:
            plain.append((stage, job_id, output))
    return Run(
        id=run_id,
        tenant_id=root.tenant_id,
        root=root,
        stages=[RunStage(stage, jobs) for stage, jobs in stages.items()],
        total=int(rows[0][-1]),
        extractions=extractions,
        outputs=plain,
    )


def _extraction(
    stage: str, job_id: int, output: Any, order: Sequence[str] | None = None
) -> Extraction | None:
    """The fields in `order` (the output model's), then any the model does not name in the
    stored order: jsonb keeps keys shortest first, which reads as no order at all."""
    if not isinstance(output, dict) or not isinstance(output.get("evidence"), dict):
        return None
    evidence: dict[str, Any] = output["evidence"]
    skip = {"evidence", "warnings", "extractor"}
    known = [n for n in order or () if n in output]
    names = known + [n for n in output if n not in set(known)]
    fields: list[tuple[str, Any, dict[str, Any]]] = []
    for name in names:
        if name not in skip:
            why = evidence.get(name)
            fields.append((str(name), output[name], why if isinstance(why, dict) else {}))
    warnings = output.get("warnings")
    return Extraction(
        stage,
        job_id,
        fields,
        [str(w) for w in warnings] if isinstance(warnings, list) else [],
    )


@dataclass(frozen=True)
class NoisyTenant:
    tenant_id: str
    enqueued_1h: int
    failed_1h: int
    pending: int


@dataclass(frozen=True)
class Tenants:
    loads: list[TenantLoad]
    queued: list[tuple[str, int]]
    noisy: list[NoisyTenant]


def read_tenants(conn: psycopg.Connection[Any], tenant: str | None) -> Tenants:
    with conn.transaction():
        begin_read(conn)
        loads = tenant_loads(conn, tenant, limit=TENANTS_SHOWN)
        params = {"tenant": tenant, "limit": TENANTS_SHOWN}
        queued = [
            (str(t), int(n))
            for t, n in conn.execute(Q["dashboard_tenant_queued"], params).fetchall()
        ]
        noisy = [NoisyTenant(*row) for row in conn.execute(Q["dashboard_noisy_tenants"], params)]
    return Tenants(loads, queued, noisy)


def job_exists(conn: psycopg.Connection[Any], job_id: int, tenant: str | None) -> bool:
    row = conn.execute(Q["dashboard_job_exists"], {"id": job_id, "tenant": tenant}).fetchone()
    return row is not None


def schedule_tenant(conn: psycopg.Connection[Any], name: str) -> tuple[bool, str | None]:
    """(whether the schedule exists, its tenant)."""
    row = conn.execute(Q["dashboard_schedule_tenant"], {"name": name}).fetchone()
    return (False, None) if row is None else (True, row[0])
