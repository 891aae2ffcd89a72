"""What the competitors' child scripts share; standard library only (they run in another venv).

A child reports to the benchmark with one JSON object per line on stdout.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, TextIO


def report(**values: Any) -> None:
    print(json.dumps(values), flush=True)


class Latencies:
    """Appends `now - sent` (seconds, time.time() in both processes) to BENCH_LATENCY_FILE."""

    def __init__(self) -> None:
        self._file: TextIO | None = None

    def record(self, sent: float) -> None:
        now = time.time()
        if self._file is None:
            self._file = open(os.environ["BENCH_LATENCY_FILE"], "a")  # noqa: SIM115  kept open
        self._file.write(f"{now - sent}\n")
        self._file.flush()


async def paced(samples: int, interval: float, send: Callable[[float], Awaitable[None]]) -> None:
    """Call `send(time.time())` every `interval` seconds, `samples` times, on a fixed grid (a
    slow call delays the next one, never the rest of the grid)."""
    start = time.monotonic()
    for i in range(samples):
        delay = start + i * interval - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        await send(time.time())


async def timed(calls: int, call: Callable[[int], Awaitable[None]]) -> float:
    """Seconds taken by `calls` sequential awaits of `call(i)`."""
    start = time.perf_counter()
    for i in range(calls):
        await call(i)
    return time.perf_counter() - start
