"""Drain N no-op jobs with real `pipeline worker` processes; then measure wake-up latency.

    python -m benchmarks.drain [--jobs 20000] [--workers 2] [--concurrency 8]

Uses DATABASE_URL, or a throwaway embedded PostgreSQL. Prints jobs/s for the drain, and
enqueue-to-start latency p50/p99 for single jobs sent to idle workers (the LISTEN/NOTIFY path).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import psycopg

from benchmarks.polling import wait_until
from benchmarks.reset import reset
from pg_pipeline import JobRequest, enqueue, enqueue_many
from pg_pipeline.embedded import embedded_url, stop_embedded
from pg_pipeline.migrate import migrate

REPO = Path(__file__).resolve().parents[1]


def start_workers(
    url: str,
    count: int,
    concurrency: int | None,
    home: Path,
    extra: list[str] | None = None,
    *,
    env: dict[str, str] | None = None,
    output: IO[bytes] | None = None,
) -> list[subprocess.Popen[bytes]]:
    """Start `count` real `pipeline worker` processes on `url` with the benchmark's stages.

    `concurrency` None passes no `--concurrency` (the worker's default); `env` adds to or
    overrides the workers' environment; `output` receives their stdout and stderr.
    """
    worker_env = {
        **os.environ,
        "DATABASE_URL": url,
        "PIPELINE_HOME": str(home),
        "PIPELINE_APP": "benchmarks.bench_app",
        "PIPELINE_LOG_LEVEL": "WARNING",
        **(env or {}),
    }
    exe = Path(sys.executable).parent / "pipeline"
    flags = [] if concurrency is None else ["--concurrency", str(concurrency)]
    return [
        subprocess.Popen(
            [str(exe), "worker", *flags, *(extra or [])],
            env=worker_env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
        )
        for _ in range(count)
    ]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def enqueue_runs(conn: psycopg.Connection[Any], jobs: int, run_size: int) -> None:
    """`jobs` no-op jobs, as runs of `run_size` (a root, then its children)."""
    if run_size <= 1:
        enqueue_many(conn, [JobRequest("bench_noop", {"i": i}) for i in range(jobs)])
        return
    roots = enqueue_many(
        conn, [JobRequest("bench_noop", {"i": i}) for i in range(0, jobs, run_size)]
    )
    children = [
        JobRequest("bench_noop", {"i": i}, parent_id=root, root_id=root)
        for n, root in enumerate(roots)
        for i in range(n * run_size + 1, min((n + 1) * run_size, jobs))
    ]
    enqueue_many(conn, children)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--wake-samples", type=int, default=200)
    parser.add_argument(
        "--run-size",
        type=int,
        default=1,
        help="jobs per run: 1 drains jobs alone; N drains runs of a root and N - 1 children, "
        "so that every completion counts in its run (pipeline.runs)",
    )
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="pgb-"))
    url = os.environ.get("DATABASE_URL") or embedded_url(scratch / "pgdata")
    import benchmarks.bench_app  # noqa: F401  registers bench_noop for enqueue validation

    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        reset(conn)
        began = time.perf_counter()
        enqueue_runs(conn, args.jobs, args.run_size)
        enqueued_s = time.perf_counter() - began
        workers = start_workers(url, args.workers, args.concurrency, scratch / "home")
        try:
            wait_until(
                conn, "SELECT count(*) FROM pipeline.jobs WHERE status = 'done'", args.jobs, 600
            )
            # From the first claim to the last completion, by the database's clock: workers
            # start draining before all of them have registered.
            span = conn.execute(
                "SELECT extract(epoch FROM max(finished_at) - min(started_at)) FROM pipeline.jobs"
            ).fetchone()
            elapsed = float(span[0]) if span else float("nan")
            # Wake latency: one job at a time into idle workers, as an app enqueues.
            reset(conn)
            for i in range(args.wake_samples):
                enqueue(conn, "bench_noop", {"i": i})
                wait_until(
                    conn, "SELECT count(*) FROM pipeline.jobs WHERE status = 'done'", i + 1, 30
                )
            latencies = [
                row[0] * 1000
                for row in conn.execute(
                    "SELECT extract(epoch FROM started_at - created_at) FROM pipeline.jobs"
                )
            ]
        finally:
            for w in workers:
                w.send_signal(signal.SIGTERM)
            for w in workers:
                w.wait(timeout=60)
    if not os.environ.get("DATABASE_URL"):
        stop_embedded(scratch / "pgdata")
    shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"drain: {args.jobs} no-op jobs, {args.workers} workers x {args.concurrency} threads: "
        f"{elapsed:.2f} s, {args.jobs / elapsed:,.0f} jobs/s"
    )
    print(f"enqueue: {args.jobs} jobs in runs of {args.run_size}: {enqueued_s:.2f} s")
    print(
        f"wake latency (enqueue -> start, idle workers, n={len(latencies)}): "
        f"p50 {statistics.median(latencies):.2f} ms, p99 {percentile(latencies, 0.99):.2f} ms"
    )


if __name__ == "__main__":
    main()
