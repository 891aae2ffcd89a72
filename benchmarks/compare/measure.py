"""One measurement each: a drain, the enqueue paths, wake latency. Each on a fresh database."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psycopg

from benchmarks.compare.cpu import Meter, Reading, Usage, ahead_of_workers, wait_idle
from benchmarks.compare.server import Server, scalar
from benchmarks.compare.sides import Side, WorkerConfig, stop


@dataclass
class Drain:
    jobs_s: float
    worker_ms: float  # worker CPU per job (processes and their children)
    postgres_ms: float  # Postgres CPU per job, less this benchmark's polling backend
    usage: Usage
    #: The share of the drain that passed from the commit to the end of the first CPU reading:
    #: CPU spent then is missed. A busy machine can starve the benchmark's own process for
    #: most of a short drain; CPU per job is then too low, and other load too high.
    cpu_missed: float = 0.0


@dataclass
class Timed:
    value: float
    usage: Usage


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


#: The longest a drain's poll sleeps: how late it may see the end. A drain of 20,000 jobs lasts
#: 0.3-0.6 s, so 10 ms is 2-3 % of it at most, for a few dozen polls.
POLL_MOST_S = 0.01


def next_poll_in(left: int, n: int, elapsed: float) -> float:
    """How long to sleep before the next poll, `left` of `n` jobs to go `elapsed` s in: half
    the time the rest should take at the rate so far, between 2 and POLL_MOST_S ms.

    The bound matters at the start: the first jobs finish while the workers wake and take
    their first small claims, so the rate so far says the rest will take seconds. Bounded by
    half a second, as it was, the second poll slept that long, and every drain that ended
    sooner was timed as ending there: 20,000 jobs in 0.52 s, the 38,500 jobs/s that most
    configurations of both libraries came out at (docs/measurements.md, 2026-12-04 (at))."""
    done = n - left
    if done <= 0:
        return 0.005
    return min(POLL_MOST_S, max(0.002, 0.5 * left / (done / max(1e-3, elapsed))))


def wait_drained(
    conn: psycopg.Connection[Any],
    sql: str,
    n: int,
    since: float,
    procs: list[subprocess.Popen[bytes]],
) -> float:
    """Poll `sql` (jobs left) until it is 0; returns time.time() when it was seen at 0, at
    most POLL_MOST_S (and a poll's round trip) after the last job finished (next_poll_in)."""
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        left = int(scalar(conn, sql))
        now = time.time()
        if left == 0:
            return now
        check_alive(procs)
        time.sleep(next_poll_in(left, n, now - since))
    raise TimeoutError(f"not drained in 30 min: {sql}")


def check_alive(procs: list[subprocess.Popen[bytes]]) -> None:
    dead = [p.returncode for p in procs if p.poll() is not None]
    if dead:
        raise RuntimeError(f"workers exited with {dead} (see the worker log)")


class Watch(Protocol):
    """Something that watches the database during a drain on a connection of its own."""

    pid: int  # its backend, whose CPU is not the drain's

    def __enter__(self) -> Watch: ...

    def __exit__(self, *exc: object) -> None: ...


def drain(
    server: Server,
    side: Side,
    config: WorkerConfig,
    n: int,
    template: str | None = None,
    *,
    idle_most_s: float = 60,
    watch: Callable[[str], Watch] | None = None,
) -> Drain:
    """Workers first, on an empty queue, until idle (given `idle_most_s`); then `n` jobs in one
    insert; the clock runs from its commit to the moment no job is left (wall clock, polled).
    `watch(url)`, if given, is entered once the workers are idle and left when it is over."""
    with server.database(side.prefix, template or side.template) as url:
        procs = side.start_workers(url, config)
        try:
            wait_idle([p.pid for p in procs], most_s=idle_most_s)
            check_alive(procs)
            with (
                psycopg.connect(url, autocommit=True) as conn,
                watch(url) if watch else nullcontext() as watcher,
            ):
                poller = int(scalar(conn, "SELECT pg_backend_pid()"))
                succeeded = int(scalar(conn, side.succeeded_sql))
                ours = {poller} if watcher is None else {poller, watcher.pid}
                meter = Meter([p.pid for p in procs], server.postmaster, frozenset(ours))
                readings: list[Reading] = []
                at_commit: list[float] = []  # monotonic, to see how late the reading ended

                def read() -> None:
                    at_commit.append(time.monotonic())
                    readings.append(meter.read())

                with ahead_of_workers():
                    committed = side.enqueue_drain(url, n, read)
                finished = wait_drained(conn, side.remaining_sql, n, committed, procs)
                after = meter.read()
                succeeded = int(scalar(conn, side.succeeded_sql)) - succeeded
            if succeeded != n:
                raise RuntimeError(f"{side.name}: {succeeded} of {n} jobs succeeded")
            check_alive(procs)
        finally:
            stop(procs)
    usage = Meter.usage(readings[0], after)
    return Drain(
        jobs_s=n / (finished - committed),
        worker_ms=1000 * usage.worker_s / n,
        postgres_ms=1000 * usage.postgres_s / n if server.postmaster else float("nan"),
        usage=usage,
        cpu_missed=(readings[0].wall - at_commit[0]) / max(1e-6, finished - committed),
    )


def enqueue(server: Server, side: Side, n: int, per_call: int | None) -> Timed:
    """Jobs/s for `n` jobs enqueued one per call (`per_call` None) or `per_call` per call."""
    with server.database(side.prefix, side.template) as url:
        meter = Meter([], server.postmaster)
        before = meter.read()
        if per_call is None:
            seconds = side.enqueue_single(url, n)
        else:
            seconds = side.enqueue_bulk(url, n, per_call)
        usage = Meter.usage(before, meter.read())
    return Timed(n / seconds, usage)


def wake(
    server: Server,
    side: Side,
    config: WorkerConfig,
    samples: int,
    interval: float,
    scratch: Path,
    *,
    idle_most_s: float = 60,
) -> tuple[list[float], Usage]:
    """Latencies (ms) from the enqueue call to the stage's first line, into the idle workers
    (given `idle_most_s` to become idle)."""
    latency_file = scratch / f"{side.prefix}-latency.txt"
    latency_file.unlink(missing_ok=True)
    with server.database(side.prefix, side.template) as url:
        procs = side.start_workers(url, config, latency_file)
        try:
            wait_idle([p.pid for p in procs], most_s=idle_most_s)
            check_alive(procs)
            meter = Meter([p.pid for p in procs], server.postmaster)
            before = meter.read()
            side.send_wake(url, samples, interval)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if latency_file.exists() and len(latency_file.read_text().split()) >= samples:
                    break
                time.sleep(0.05)
            usage = Meter.usage(before, meter.read())
        finally:
            stop(procs)
    values = [1000 * float(v) for v in latency_file.read_text().split()]
    if len(values) < samples:
        raise RuntimeError(f"{side.name}: {len(values)} of {samples} wake jobs ran in 30 s")
    return values, usage
