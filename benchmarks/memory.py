"""A worker's memory over a long drain: its RSS must stay flat, not grow with jobs run.

    python -m benchmarks.memory [--jobs 1000000] [--concurrency 8]

Uses DATABASE_URL, or a throwaway embedded PostgreSQL. Enqueues the jobs in bulk, starts one
`pipeline worker` (defaults unless --concurrency), samples its resident set size once a second
from /proc, and prints the RSS after 10% of the jobs, at the end, the peak, and end ÷ 10%.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import psycopg

from benchmarks.drain import start_workers
from benchmarks.reset import reset
from pg_pipeline import JobRequest, enqueue_many
from pg_pipeline.embedded import embedded_url, stop_embedded
from pg_pipeline.migrate import migrate

BATCH = 5_000


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--concurrency", type=int, default=None)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="pgm-"))
    url = os.environ.get("DATABASE_URL") or embedded_url(scratch / "pgdata")
    import benchmarks.bench_app  # noqa: F401  registers bench_noop for enqueue validation

    samples: list[tuple[int, int]] = []  # (jobs done, RSS KiB)
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        reset(conn)
        for start in range(0, args.jobs, BATCH):
            count = min(BATCH, args.jobs - start)
            enqueue_many(conn, [JobRequest("bench_noop", {"i": start + i}) for i in range(count)])
        started = time.monotonic()
        (worker,) = start_workers(url, 1, args.concurrency, scratch / "home")
        try:
            done = 0
            while done < args.jobs:
                if worker.poll() is not None:
                    raise RuntimeError(f"the worker exited with {worker.returncode}")
                time.sleep(1.0)
                row = conn.execute(
                    "SELECT count(*) FROM pipeline.jobs WHERE status = 'done'"
                ).fetchone()
                done = int(row[0]) if row else 0
                samples.append((done, rss_kib(worker.pid)))
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
        elapsed = time.monotonic() - started
    if not os.environ.get("DATABASE_URL"):
        stop_embedded(scratch / "pgdata")
    shutil.rmtree(scratch, ignore_errors=True)

    early = next(rss for done, rss in samples if done >= args.jobs // 10)
    end = samples[-1][1]
    peak = max(rss for _, rss in samples)
    print(
        f"memory: {args.jobs:,} no-op jobs, 1 worker, {len(samples)} samples over {elapsed:.0f} s "
        f"({args.jobs / elapsed:,.0f} jobs/s with startup)"
    )
    print(
        f"RSS after 10% {early / 1024:.1f} MiB, at the end {end / 1024:.1f} MiB, "
        f"peak {peak / 1024:.1f} MiB; end / 10% = {end / early:.3f}"
    )


if __name__ == "__main__":
    main()
