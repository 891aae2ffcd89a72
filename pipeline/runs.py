"""Reading a run (a root job and everything it led to): progress, outputs, failures."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from pg_pipeline.plans import Plan, Rows, Statement, one, sync_api
from pg_pipeline.queries import Q

TERMINAL = frozenset({"done", "failed", "cancelled"})


@dataclass(frozen=True)
class StageProgress:
    stage: str
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def finished(self) -> int:
        return sum(n for status, n in self.counts.items() if status in TERMINAL)

    @property
    def failed(self) -> int:
        return self.counts.get("failed", 0) + self.counts.get("cancelled", 0)


def run_progress_plan(root_id: int) -> Plan[list[StageProgress]]:
    """Stages of the run in the order they first appeared, with job counts by status."""
    return Plan(one(Statement(Q["run_progress"], {"root_id": root_id}))).then(_progress)


def _progress(rows: Rows) -> list[StageProgress]:
    stages: dict[str, StageProgress] = {}
    for stage, status, jobs, error in rows:
        progress = stages.setdefault(stage, StageProgress(stage))
        progress.counts[status] = int(jobs)
        if error and progress.error is None:
            stages[stage] = StageProgress(stage, progress.counts, error)
    return list(stages.values())


@dataclass(frozen=True)
class RunState:
    """A run's stored status (pipeline.runs, kept by the statements that change its jobs):
    running, waiting, done, failed (a job of it failed for good: it can never end done) or
    cancelled. For failed and cancelled, the first job that did, its stage and its error."""

    status: str
    blocked_job_id: int | None = None
    blocked_stage: str | None = None
    blocked_reason: str | None = None

    @property
    def ended(self) -> bool:
        """Nothing further can make it done: it is done, failed or cancelled."""
        return self.status in TERMINAL


def run_status_plan(run_id: int) -> Plan[RunState | None]:
    """The run's status, or None when there is no such job. A job without descendants is a
    run of its own, whose status is the job's (queued and running: running)."""
    return Plan(one(Statement(Q["run_state"], {"run_id": run_id}))).then(_state)


def _state(rows: Rows) -> RunState | None:
    if not rows:
        return None
    status, blocked_id, stage, reason = rows[0]
    return RunState(str(status), blocked_id, stage, reason)


def job_output(conn: psycopg.Connection[Any], job_id: int) -> Any | None:
    """The output this job stored, as JSON, or None."""
    row = conn.execute(Q["job_output"], {"job_id": job_id}).fetchone()
    return None if row is None else row[0]


def run_output_plan(
    root_id: int,
    stage: str,
    part: int | None = None,
    *,
    generation: int | None = None,
    version: str | None = None,
) -> Plan[Any | None]:
    """The run's output of `stage` (and `part`, for a stage with parts), as JSON, or None: of
    its newest generation (a rerun's: pg_pipeline.rerun), or of `generation`, or of the newest
    one `version` of the stage's code made."""
    params = {
        "root_id": root_id,
        "stage": stage,
        "part": part,
        "generation": generation,
        "version": version,
    }
    return Plan(one(Statement(Q["run_output"], params))).then(_first_value)


def _first_value(rows: Rows) -> Any | None:
    return rows[0][0] if rows else None


def run_outputs(
    conn: psycopg.Connection[Any],
    root_id: int,
    stage: str,
    generation: int | None = None,
    version: str | None = None,
) -> list[tuple[int | None, Any]]:
    """The run's outputs of `stage` as (part, JSON), ordered by part, all of one generation:
    the newest, or `generation`, or the newest one `version` of the stage's code made."""
    params = {"root_id": root_id, "stage": stage, "generation": generation, "version": version}
    rows = conn.execute(Q["run_outputs"], params).fetchall()
    return [(row[0], row[1]) for row in rows]


@dataclass(frozen=True)
class StoredOutput:
    """One job's stored output, with the run it belongs to and the run's tenant."""

    run_id: int
    job_id: int
    part: int | None
    output: Any
    created_at: datetime
    tenant_id: str | None


def stage_outputs(
    conn: psycopg.Connection[Any],
    stage: str,
    *,
    tenant: str | None = None,
    after: int = 0,
    limit: int = 500,
) -> list[StoredOutput]:
    """The outputs of `stage` across runs (of `tenant`'s alone when given), oldest job first,
    at most `limit`, from the job after `after`: page on with the last one's job_id. What an
    app reads its stages' results back with, such as the documents app's review labels.
    Outputs go with their runs when retention prunes them."""
    rows = conn.execute(
        Q["stage_outputs"],
        {"stage": stage, "tenant": tenant, "after": after, "limit": limit},
    ).fetchall()
    return [StoredOutput(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows]


def live_workers_plan(stage: str, *, alive_s: float = 180) -> Plan[int]:
    """Workers serving `stage` whose heartbeat is recent."""
    params = {"stage": stage, "alive_s": alive_s}
    return Plan(one(Statement(Q["live_workers_for_stage"], params))).then(_count)


def _count(rows: Rows) -> int:
    return int(rows[0][0]) if rows else 0


# The public readers: `run_progress(conn, root_id)` runs run_progress_plan(root_id) on what
# `conn` holds; pg_pipeline.aio makes the async ones from the same plans.
run_progress = sync_api(run_progress_plan)
run_output = sync_api(run_output_plan)
live_workers = sync_api(live_workers_plan)
run_status = sync_api(run_status_plan)
