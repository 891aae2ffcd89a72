"""Rate limits as operators see and set them: `pipeline limits`, status, metrics and the
dashboard (docs/limits.md). A capacity set here applies at every worker's next claim."""

from __future__ import annotations

from typing import Any, NamedTuple

import psycopg

from pg_pipeline.queries import Q
from pg_pipeline.vocabulary import ONE_KEY

LIST_LIMIT = 1000  #: (limit, key) rows `limits list` shows at most


class LimitUse(NamedTuple):
    """One (limit, key): its capacity, what its window holds now, and the jobs waiting on it."""

    name: str
    key: str  #: '*' is the limit's default capacity, for the keys without one of their own
    capacity: int | None  #: units per `per_seconds`; None: no capacity, nothing held back
    per_seconds: int | None
    source: str | None  #: "set" by an operator, "code" a worker's default, None: none
    capacity_key: str | None  #: the row the capacity comes from: `key`, or '*'
    used: int  #: units charged in the window now
    waiting: int  #: queued jobs charged to it
    waiting_units: int

    @property
    def full(self) -> bool:
        return self.capacity is not None and self.used >= self.capacity


def set_limit(
    conn: psycopg.Connection[Any], name: str, units: int, *, per: int, key: str = ONE_KEY
) -> None:
    """`units` per `per` seconds for the limit `name`'s `key` ('*': every key without its own)."""
    # Imported here: `pipeline status` reads the limits (limit_rows) without their declarations.
    from pg_pipeline.limits import check_capacity

    check_capacity(units, per)
    conn.execute(Q["set_limit"], {"name": name, "key": key, "units": units, "per": per})


def clear_limit(conn: psycopg.Connection[Any], name: str, key: str | None = None) -> list[str]:
    """Remove the capacity of one key of `name`, or of all its keys (None); the keys cleared."""
    rows = conn.execute(Q["clear_limit"], {"name": name, "key": key}).fetchall()
    return sorted(str(r[0]) for r in rows)


def limit_rows(
    conn: psycopg.Connection[Any], name: str | None = None, limit: int = LIST_LIMIT
) -> list[LimitUse]:
    """Every (limit, key) with a capacity, charges or waiting jobs, by limit and key."""
    rows = conn.execute(Q["limits_list"], {"name": name, "limit": limit}).fetchall()
    return [LimitUse(*row) for row in rows]
