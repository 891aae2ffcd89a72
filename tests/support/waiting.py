"""Wait for conditions, never for fixed sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

T = TypeVar("T")


def wait_for(
    check: Callable[[], T],
    *,
    timeout: float = 30.0,
    what: str = "condition",
    max_interval: float = 0.25,
) -> T:
    """Poll `check` with a growing interval (at most `max_interval`) until it returns something
    truthy. A condition that holds only for a moment needs a short `max_interval`."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(delay)
        delay = min(max_interval, delay * 1.5)


def lock_waiters(conn: psycopg.Connection[Any]) -> int:
    """Backends of `conn`'s database waiting for a lock (a row's, or an advisory one)."""
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    ).fetchone()
    assert row is not None
    return int(row[0])
