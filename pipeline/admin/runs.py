"""Runs as operators read them: a root job and everything it led to (a document is a run).

Every read takes `tenant`: None for every tenant, else that tenant's jobs alone, in every
statement; another tenant's run does not exist for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from pipeline.queries import Q

RUNS_LIMIT = 30  #: runs a page of the list shows
#: Index probes the runs list makes at most, looking for a tenant's runs among others'.
RUN_PROBES = 500
#: Jobs of one run read at most (a document has at most 2000 pages, and 2 more jobs).
RUN_JOBS_LIMIT = 2100
#: Outputs of a run's single jobs read at most.
RUN_OUTPUTS_LIMIT = 50


@dataclass(frozen=True)
class RunSummary:
    id: int
    type: str
    tenant_id: str | None
    status: str  #: the root job's
    created_at: datetime
    finished_at: datetime | None
    descendants: int
    done: int  #: of the descendants
    failed: int  #: of the descendants, failed or cancelled


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
class Run:
    id: int
    tenant_id: str | None
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
    probes: int = RUN_PROBES,
    limit: int = RUNS_LIMIT,
) -> list[RunSummary]:
    """The newest runs with more than one job, below `before` (a run id) when set. For one
    tenant, among the newest `probes` runs of every tenant."""
    rows = conn.execute(
        Q["runs_list"],
        {"tenant": tenant, "before": before, "probes": probes, "limit": limit},
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
    return Run(
        id=run_id,
        tenant_id=root.tenant_id,
        root=root,
        stages=[RunStage(stage, jobs) for stage, jobs in stages.items()],
        total=int(rows[0][-1]),
        outputs=[(str(stage), int(job_id), output) for stage, job_id, output in outputs],
    )
