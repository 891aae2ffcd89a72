"""Jobs as operators see and steer them: list (a page either side of a cursor, with a bounded
search of their errors), show, retry and cancel, one or in bulk. `pipeline jobs` and the
dashboard's job pages both go through here.

Every function takes `tenant`. When it is set, every statement matches it: a caller scoped to
one tenant cannot read or change another tenant's job, which to it does not exist. Bulk
changes run in batches, one short transaction each, so that they never hold many row locks
for long against the workers claiming and settling the same table. `conn` is an autocommit
connection (pg_pipeline.connect()).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

import psycopg

from pg_pipeline.admin.waits import WaitTask, get_wait
from pg_pipeline.queries import Q

BULK_BATCH = 500  #: jobs changed per transaction by a bulk retry or cancel
CHILDREN_SHOWN = 100  #: child ids `show` returns at most (a fan-out can have thousands)
#: Failed and cancelled jobs the text search reads per page at most, newest first.
SEARCH_WINDOW = 10_000
#: Stage names a jobs filter offers at most (recorded, queued or running ones).
STAGES_LISTED = 500


@dataclass(frozen=True)
class JobFilter:
    """Which jobs to list; None matches any."""

    status: str | None = None
    stage: str | None = None
    tenant: str | None = None
    #: created at most this many seconds ago, by the database's clock
    since_s: float | None = None
    #: created at or after this time
    since: datetime | None = None
    #: created before this time
    until: datetime | None = None
    #: a substring of last_error, matched case-insensitively (see JobQuery.windowed)
    search: str | None = None


@dataclass(frozen=True)
class JobQuery(JobFilter):
    """A page of the jobs that match, either side of a cursor."""

    #: the page of matches just older than this id (an "older" link), or
    before: int | None = None
    #: just newer than this id (a "newer" link); neither: the newest page
    after: int | None = None
    limit: int = 50

    @property
    def windowed(self) -> bool:
        """Whether the text search reads a window of failed and cancelled jobs (any status,
        failed or cancelled); among queued or running jobs their own index bounds it."""
        return self.search is not None and self.status in (None, "failed", "cancelled")


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
    #: its ended attempts, oldest first (the running one is the job's own fields)
    attempt_history: list[Attempt] = dataclasses.field(default_factory=list)
    #: its open wait when it waits for input, else the last it resolved (pg_pipeline.waits)
    wait: WaitTask | None = None
    #: the output it stored, which generation of its run it is and the code version that made
    #: it (pipeline/output_versions.py); None when it stored none
    output: StoredOutput | None = None


@dataclass(frozen=True)
class StoredOutput:
    generation: int
    code_version: str | None  #: None: stored before code versions were recorded
    stored_at: datetime


@dataclass(frozen=True)
class Attempt:
    """One ended attempt of a job (pipeline.job_attempts)."""

    attempt: int  #: the charged attempt number the claim counted
    claims: int  #: with the job's id, the claim's fencing token
    #: done, retried, failed, timed_out, crashed, lost, cancelled, given_back, waiting
    outcome: str
    worker_id: Any
    claimed_at: datetime | None
    started_at: datetime | None  #: when the worker began to run it; None when unknown
    ended_at: datetime
    duration_s: float | None
    error: str | None
    has_logs: bool
    logs_dropped: int  #: lines logged past the cap (pipeline/attempt_logs.py)


@dataclass(frozen=True)
class AttemptLogs:
    """The lines one ended attempt logged."""

    attempt: int
    claims: int
    outcome: str
    ended_at: datetime
    logs: str | None
    logs_dropped: int


class Change(enum.Enum):
    """What a retry or cancel of one job did."""

    DONE = "done"
    MISSING = "missing"  #: no such job (for this tenant)
    REFUSED = "refused"  #: the job is not in a state the change applies to
    #: retention deleted the job's run while the change waited for it (see prune_lock_runs)
    PRUNED = "pruned"


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


def list_jobs(
    conn: psycopg.Connection[Any],
    where: JobFilter,
    *,
    limit: int,
    before: int | None = None,
) -> list[JobSummary]:
    """The newest `limit` jobs that match, newest first; `before`: only ids below it (the
    smallest id of the previous page). The rows of page_jobs's page."""
    filters = {f.name: getattr(where, f.name) for f in fields(JobFilter)}
    return page_jobs(conn, JobQuery(**filters, before=before, limit=limit)).rows


def page_jobs(conn: psycopg.Connection[Any], q: JobQuery) -> JobsPage:
    """A page of jobs, newest first, with the cursors of the pages either side."""
    if q.after is None:
        return _older_page(conn, q)
    found = _newer_page(conn, q)
    # Past the newest match: the first page, full, as the "first" link shows it.
    return found if found is not None else _older_page(conn, replace(q, after=None))


def _like(text: str) -> str:
    # The user's text is a substring, not a pattern: its own % and _ match themselves.
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _params(q: JobQuery) -> dict[str, Any]:
    return {
        "status": q.status,
        "stage": q.stage,
        "tenant": q.tenant,
        "since_s": q.since_s,
        "since": q.since,
        "until": q.until,
        "search": None if q.search is None else _like(q.search),
        "before": q.before,
        "after": q.after,
        "limit": q.limit + 1,  # one more than shown: is there another page?
        "window": SEARCH_WINDOW,
        "finished_from": None,
        "finished_to": None,
    }


def _list_params(conn: psycopg.Connection[Any], q: JobQuery) -> dict[str, Any]:
    """jobs_list's parameters: with a stage or an outcome, the span of finish times in which
    the history may hold such jobs (jobs_finished_span), so that its plan reads those days
    alone. Queued, running and waiting jobs are never in the history."""
    params = _params(q)
    if q.stage is not None or q.status in ("done", "failed", "cancelled"):
        row = conn.execute(Q["jobs_finished_span"], params).fetchone()
        if row is not None:
            params["finished_from"], params["finished_to"] = row
    return params


# jobs_list and jobs_search run unprepared (prepare=False): each is planned for the values it
# is given each time, which folds away the filters that are not set, picks the page's order
# (older or newer) and prunes the history's days by the list's finish-time span. Prepared
# (psycopg prepares a statement on its fifth run on a connection), PostgreSQL may settle on a
# generic plan after five custom ones, planned for no values: measured at 10 M finished jobs,
# the list by a stage no job has then took 2.1-2.8 s instead of 2 ms (with the span read by
# the statement itself, in an InitPlan).
def _matches(
    conn: psycopg.Connection[Any], q: JobQuery
) -> tuple[list[JobSummary], Searched | None]:
    """One more than a page of the jobs that match, in the page's order (newest first, or
    oldest first with q.after), and the window a text search read."""
    if q.windowed:
        rows = conn.execute(Q["jobs_search"], _params(q), prepare=False).fetchall()
        n, low, high, more = rows[0][-4:]
        found = [JobSummary(*r[:-4]) for r in rows if r[0] is not None]
        return found, Searched(int(n), low, high, full=bool(more))
    listed = conn.execute(Q["jobs_list"], _list_params(conn, q), prepare=False)
    return [JobSummary(*r) for r in listed], None


def _older_page(conn: psycopg.Connection[Any], q: JobQuery) -> JobsPage:
    rows, searched = _matches(conn, q)
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
    rows, searched = _matches(conn, q)
    if len(rows) > q.limit:
        shown = rows[: q.limit]
        newer: int | None = shown[-1].id
    elif searched is not None and searched.full:
        shown, newer = rows, searched.high
    else:
        return None
    shown.reverse()
    return JobsPage(shown, shown[-1].id if shown else q.after + 1, newer, searched)


def stage_names(
    conn: psycopg.Connection[Any], *, tenant: str | None = None, limit: int = STAGES_LISTED
) -> list[str]:
    """The stages a jobs filter offers, by name: those workers recorded and those with queued
    or running jobs (`tenant`'s, when set), at most `limit`."""
    rows = conn.execute(Q["stage_names"], {"tenant": tenant, "limit": limit}).fetchall()
    return [str(row[0]) for row in rows]


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
    return JobDetail(
        **fields,
        children=list(children),
        children_total=total,
        timeline=timeline,
        attempt_history=job_attempts(conn, job_id),
        wait=get_wait(conn, job_id, tenant=tenant),
        output=stored_output(conn, job_id),
    )


def stored_output(conn: psycopg.Connection[Any], job_id: int) -> StoredOutput | None:
    """Which version of its run's outputs the job's output is. No tenant: the caller read the
    job first."""
    row = conn.execute(Q["job_output_version"], {"job_id": job_id}).fetchone()
    return None if row is None else StoredOutput(int(row[0]), row[1], row[2])


def job_attempts(conn: psycopg.Connection[Any], job_id: int) -> list[Attempt]:
    """The job's ended attempts, oldest first. No tenant: the caller read the job first."""
    return [Attempt(*row) for row in conn.execute(Q["job_attempts"], {"id": job_id})]


def job_logs(
    conn: psycopg.Connection[Any], job_id: int, *, tenant: str | None = None
) -> list[AttemptLogs] | None:
    """The lines each ended attempt of the job logged, oldest first; None when there is no
    such job (for this tenant)."""
    if not job_exists(conn, job_id, tenant=tenant):
        return None
    return [AttemptLogs(*row) for row in conn.execute(Q["job_logs"], {"id": job_id})]


_TIMELINE = ("created_at", "run_after", "started_at", "finished_at")


def job_exists(conn: psycopg.Connection[Any], job_id: int, *, tenant: str | None = None) -> bool:
    """Whether there is such a job (for this tenant). Also the tenant check of a change by id:
    a job's tenant never changes once it is enqueued (no statement sets tenant_id), so a change
    by id that follows it is scoped as well."""
    return conn.execute(Q["job_exists"], {"id": job_id, "tenant": tenant}).fetchone() is not None


def bound_transaction(conn: psycopg.Connection[Any], timeout_ms: int) -> None:
    """First in a transaction: each of its statements is cancelled past timeout_ms."""
    conn.execute(Q["admin_bound_transaction"], {"timeout_ms": str(timeout_ms)})


def _wake(conn: psycopg.Connection[Any], types: Sequence[str]) -> None:
    # Requeued by an UPDATE, which the insert trigger does not see: tell idle workers here
    # rather than leave the jobs to their next poll.
    if types:
        conn.execute(Q["notify_ready"], {"types": sorted(set(types))})


def _reopen_waits(conn: psycopg.Connection[Any], retried: Sequence[tuple[Any, ...]]) -> None:
    # In the retry's transaction, so no worker runs the job before: a wait that timed out
    # would fail it again at once. A retried job waits again instead (pg_pipeline.waits).
    if retried:
        conn.execute(Q["waits_reopen"], {"ids": [row[0] for row in retried]})


def retry_job(conn: psycopg.Connection[Any], job_id: int, *, tenant: str | None = None) -> Change:
    """A failed or cancelled job back in the queue, with one more attempt if it had none left."""
    if not job_exists(conn, job_id, tenant=tenant):
        return Change.MISSING
    with conn.transaction():
        rows = conn.execute(Q["retry"], {"id": job_id}).fetchall()
        _reopen_waits(conn, rows)
    if not rows:
        # A prune holding the job's run makes the retry wait for it; gone now, it was pruned.
        return Change.REFUSED if job_exists(conn, job_id, tenant=tenant) else Change.PRUNED
    _wake(conn, [job_type for _, job_type in rows])
    return Change.DONE


def retry_failed(
    conn: psycopg.Connection[Any],
    *,
    stage: str | None = None,
    tenant: str | None = None,
    batch: int = BULK_BATCH,
    timeout_ms: int | None = None,
) -> int:
    """Every failed job (of `stage`, of `tenant`) back in the queue, `batch` per transaction;
    returns how many. Each is retried once, even if it fails again before this returns.
    timeout_ms: each statement's bound (the dashboard's); the batches done before one runs
    out of time stay done."""
    after, total = 0, 0
    while True:
        with conn.transaction():
            if timeout_ms is not None:
                bound_transaction(conn, timeout_ms)
            rows = conn.execute(
                Q["jobs_retry_failed"],
                {"after": after, "stage": stage, "tenant": tenant, "batch": batch},
            ).fetchall()
            _reopen_waits(conn, rows)
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
    if not job_exists(conn, job_id, tenant=tenant):
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
