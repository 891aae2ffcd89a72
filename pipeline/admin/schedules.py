"""Schedules as operators steer them: pause and resume, scoped to a tenant as every change is.

With `tenant` set, another tenant's schedule (or one without a tenant) does not exist: the
change answers False, as for a name nobody has.
"""

from __future__ import annotations

from typing import Any

import psycopg

from pg_pipeline.queries import Q
from pg_pipeline.schedules import pause_schedule, resume_schedule


def pause(conn: psycopg.Connection[Any], name: str, *, tenant: str | None = None) -> bool:
    """Stop firing until resumed; False when there is no such schedule (for this tenant)."""
    return _visible(conn, name, tenant) and pause_schedule(conn, name)


def resume(conn: psycopg.Connection[Any], name: str, *, tenant: str | None = None) -> bool:
    """Fire again from the next fire time after now; False when there is no such schedule (for
    this tenant)."""
    return _visible(conn, name, tenant) and resume_schedule(conn, name) is not None


def _visible(conn: psycopg.Connection[Any], name: str, tenant: str | None) -> bool:
    # Two statements: between them only a worker syncing a schedule declared in code could
    # move it to another tenant, which only the code's author can bring about.
    row = conn.execute(Q["schedule_tenant"], {"name": name}).fetchone()
    return row is not None and (tenant is None or row[0] == tenant)
