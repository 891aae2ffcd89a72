"""Procrastinate's app and tasks (imported by its workers and by procrastinate_child.py).

BENCH_DSN names the database; BENCH_POOL, when set, sizes the connector's pool (min = max):
a worker of concurrency N holds a connection per running job plus its listener, and the pool's
default of 4 would cap it. The tasks are `async def`, which is what Procrastinate's concurrency
is for (sync tasks run in threads).
"""

from __future__ import annotations

import os
from typing import Any

import procrastinate  # type: ignore[import-not-found]

from benchmarks.compare.child_common import Latencies

LATENCIES = Latencies()


def _connector() -> Any:
    kwargs: dict[str, Any] = {"conninfo": os.environ.get("BENCH_DSN", "")}
    if os.environ.get("BENCH_POOL"):
        size = int(os.environ["BENCH_POOL"])
        kwargs.update(min_size=size, max_size=size)
    return procrastinate.PsycopgConnector(**kwargs)


app = procrastinate.App(connector=_connector())


async def noop(i: int = 0) -> None:
    return None


async def wake(t: float) -> None:
    LATENCIES.record(t)


NOOP = app.task(name="noop")(noop)
WAKE = app.task(name="wake")(wake)
