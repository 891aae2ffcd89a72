"""Waits as whoever answers them sees them: the open ones (a review queue, `pipeline runs
waiting`), and one job's. Each WaitTask carries what the stage recorded with its wait: the JSON
schema a signal's payload must fit, the stage's proposal and the detail a reviewer needs.

`tenant`, when set, keeps every read to that tenant's waits. Any connection
pipeline/connections.py resolves will do (psycopg, SQLAlchemy, Django), as for signal().
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pg_pipeline.inputs import wait_name
from pg_pipeline.plans import Plan, Rows, Statement, one, sync_api
from pg_pipeline.queries import Q

#: Open waits list_waits returns at most per call.
LIST_MAX = 1000


@dataclass(frozen=True)
class WaitTask:
    """One wait of a job: open while resolved_at is None."""

    job_id: int
    run_id: int
    tenant_id: str | None
    stage: str
    name: str
    schema: dict[str, Any]  #: the JSON schema a signal's payload must fit
    proposal: Any  #: what the stage proposed (JSON), or None
    detail: Any  #: what the stage recorded for the reviewer (JSON), or None
    created_at: datetime
    deadline: datetime
    resolved_at: datetime | None
    resolution: str | None  #: 'signalled', 'timed_out', 'cancelled'; None while open
    payload: Any  #: what the signal delivered (JSON), or None
    #: While open again: why the stage's model refused the answer signalled last (which
    #: answer, pydantic's message), as the job's last_error says; else None
    last_refusal: str | None = None

    @property
    def open(self) -> bool:
        return self.resolved_at is None


def _tasks(rows: Rows) -> list[WaitTask]:
    return [WaitTask(*row) for row in rows]


def list_waits_plan(
    *, tenant: str | None = None, name: str | None = None, limit: int = 100
) -> Plan[list[WaitTask]]:
    """The open waits, oldest first; `tenant` and `name` narrow them."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LIST_MAX:
        raise ValueError(f"limit is a whole number within 1..{LIST_MAX}, got {limit!r}")
    params = {
        "tenant": tenant,
        "name": None if name is None else wait_name(name),
        "limit": limit,
    }
    return Plan(one(Statement(Q["waits_open"], params))).then(_tasks)


def get_wait_plan(
    job_id: int, name: str | None = None, *, tenant: str | None = None
) -> Plan[WaitTask | None]:
    """The job's wait named `name`; without a name its open one, else its latest resolved one.
    None when it has none (or, with `tenant`, when the job is another tenant's)."""
    if isinstance(job_id, bool) or not isinstance(job_id, int):
        raise TypeError(f"job_id is a job's id (an int), got {job_id!r}")
    params = {
        "job_id": job_id,
        "name": None if name is None else wait_name(name),
        "tenant": tenant,
    }
    return Plan(one(Statement(Q["waits_of_job"], params))).then(
        lambda rows: _tasks(rows)[0] if rows else None
    )


list_waits = sync_api(list_waits_plan)
get_wait = sync_api(get_wait_plan)
