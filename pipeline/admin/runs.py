"""Runs as operators read them: a root job and everything it led to (a document is a run).

Every read takes `tenant`: None for every tenant, else that tenant's jobs alone, in every
statement; another tenant's run does not exist for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from pg_pipeline.admin.jobs import job_exists
from pg_pipeline.queries import Q

RUNS_LIMIT = 30  #: runs a page of the list shows
#: Jobs of one run read at most (a document has at most 2000 pages, and 2 more jobs).
RUN_JOBS_LIMIT = 2100
#: Outputs of a run's single jobs read at most.
RUN_OUTPUTS_LIMIT = 50
#: A job's status as the status of the run it is alone in (a job without descendants has no
#: row in pipeline.runs).
_ALONE = {"queued": "running", "running": "running"}


@dataclass(frozen=True)
class RunSummary:
    id: int
    type: str | None  #: the root job's stage
    tenant_id: str | None
    status: str  #: the run's (pipeline.runs), not the root job's
    created_at: datetime
    finished_at: datetime | None  #: when it stopped running: ended, or blocked
    jobs: int
    active: int  #: queued or running
    done: int
    failed: int
    cancelled: int
    #: the first job that failed or was cancelled, and its error: why it cannot end done
    blocked_job_id: int | None
    blocked_reason: str | None


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
class BlockedStep:
    """A next stage the run will never reach (until a retry): a fan-out's join has a child
    that failed or was cancelled, so it never enqueues the stage; or the job that blocks the
    run failed before it could enqueue the `then` its stage declares."""

    stage: str
    after: int  #: the job that fanned out, or the job that failed
    failed: int  #: children failed or cancelled (1 for a job that failed alone)
    fan_out: bool


@dataclass(frozen=True)
class Run:
    id: int
    tenant_id: str | None
    status: str  #: the run's (see RunSummary.status)
    blocked_job_id: int | None
    blocked_reason: str | None
    blocked_steps: list[BlockedStep]
    root: RunJob
    stages: list[RunStage]  #: in the order they first appear
    total: int  #: jobs in the run; more than the stages hold when past RUN_JOBS_LIMIT
    #: the outputs of its single jobs (not a fan-out's pages), as (stage, job id, output)
    outputs: list[tuple[str, int, Any]]


def list_runs(
    conn: psycopg.Connection[Any],
    tenant: str | None,
    before: int | None,
    *,
    status: str | None = None,
    limit: int = RUNS_LIMIT,
) -> list[RunSummary]:
    """The newest runs, below `before` (a run id) when set, in `status` when set: runs of more
    than one job from their stored status, and waiting jobs alone in their run (one job, active
    and waiting), which is how a single approval job waits. Other jobs alone are not runs here:
    every standalone job is one (`pipeline jobs list` lists them)."""
    rows = conn.execute(
        Q["runs_list"],
        {"tenant": tenant, "before": before, "status": status, "limit": limit},
    ).fetchall()
    return [RunSummary(*row) for row in rows]


def read_run(conn: psycopg.Connection[Any], run_id: int, tenant: str | None) -> Run | None:
    """A run as its stages in the order they first appear, or None when there is no such run
    (for this tenant). run_id is the root job's id; a job of the run names its own run."""
    params = {"run_id": run_id, "tenant": tenant}
    rows = conn.execute(Q["run_jobs"], params | {"limit": RUN_JOBS_LIMIT}).fetchall()
    if not rows or rows[0][0] != run_id:
        return None  # no such job, or not a run's root
    outputs = conn.execute(
        Q["run_single_outputs"], params | {"limit": RUN_OUTPUTS_LIMIT}
    ).fetchall()
    stages: dict[str, list[RunJob]] = {}
    for row in rows:
        job = RunJob(*row[:-1])
        stages.setdefault(job.type, []).append(job)
    root = RunJob(*rows[0][:-1])
    stored = conn.execute(Q["run_status"], params).fetchone()
    if stored is None:  # a job alone: the run is the job
        status, blocked_id, reason = _ALONE.get(root.status, root.status), None, None
        if root.status in ("failed", "cancelled"):
            blocked_id, reason = root.id, root.last_error
    else:
        status, blocked_id, reason = str(stored[0]), stored[5], stored[6]
    blocked = conn.execute(
        Q["run_blocked_steps"], {"job_ids": [row[0] for row in rows], "blocked_id": blocked_id}
    ).fetchall()
    return Run(
        id=run_id,
        tenant_id=root.tenant_id,
        status=status,
        blocked_job_id=blocked_id,
        blocked_reason=reason,
        blocked_steps=[BlockedStep(str(t), int(a), int(f), bool(o)) for t, a, f, o in blocked],
        root=root,
        stages=[RunStage(stage, jobs) for stage, jobs in stages.items()],
        total=int(rows[0][-1]),
        outputs=[(str(stage), int(job_id), output) for stage, job_id, output in outputs],
    )


def cancel_tree(
    conn: psycopg.Connection[Any], job_id: int, tenant: str | None, *, reason: str | None = None
) -> list[int] | None:
    """Cancel a job and everything it led to, in one transaction: for a run's root, the whole
    run; for a job inside a run, it and its descendants. Their queued and running jobs move into
    the history as cancelled, and the workers running some are told to stop them. Returns the
    ids cancelled (empty: nothing of it was queued or running), or None when there is no such
    job (for this tenant)."""
    if not job_exists(conn, job_id, tenant=tenant):
        return None
    cancelled = conn.execute(Q["cancel_tree"], {"id": job_id, "reason": reason}).fetchall()
    return [int(row[0]) for row in cancelled]
