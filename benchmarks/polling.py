"""Waiting on the database from a benchmark: poll a count until it reaches a target."""

from __future__ import annotations

import time
from typing import Any

import psycopg


def wait_until(
    conn: psycopg.Connection[Any], sql: str, target: int, timeout: float, *, every: float = 0.005
) -> None:
    """Poll `sql` (one integer) every `every` seconds until it is at least `target`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = conn.execute(sql).fetchone()
        if row and row[0] >= target:
            return
        time.sleep(every)
    raise TimeoutError(f"not reached in {timeout} s: {sql}")
