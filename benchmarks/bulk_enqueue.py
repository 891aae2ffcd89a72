"""Where a bulk enqueue's time goes: request objects, validation and encoding, the insert.

    python -m benchmarks.bulk_enqueue [--calls 60] [--per-call 1000]

Uses DATABASE_URL, or a throwaway embedded PostgreSQL. Each call enqueues `--per-call` no-op
jobs with the payload {"i": n}, as `enqueue_many` does it, in its three parts; the first ten
calls warm up and are left out of the medians. To compare two commits, run this in each (with
that commit's `pipeline` first on PYTHONPATH), alternating, since the machine's speed drifts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from pg_pipeline import JobRequest
from pg_pipeline.embedded import embedded_url, stop_embedded
from pg_pipeline.migrate import migrate
from pg_pipeline.stage import REGISTRY

WARM_UP = 10


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bulk_enqueue")
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--per-call", type=int, default=1000)
    args = parser.parse_args()
    if args.calls <= WARM_UP:
        parser.error(f"--calls must be more than the {WARM_UP} warm-up calls")
    import benchmarks.bench_app  # noqa: F401  registers bench_noop

    # The package's `enqueue` is the function of that name; the module holds the parts.
    enqueue_module = sys.modules["pg_pipeline.enqueue"]
    scratch = Path(tempfile.mkdtemp(prefix="pgbulk-"))
    url = os.environ.get("DATABASE_URL") or embedded_url(scratch / "pgdata")
    parts: dict[str, list[float]] = {"requests": [], "validation": [], "insert": []}
    ids: list[int] = []
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)
            for call in range(args.calls):
                first = call * args.per_call
                started = time.perf_counter()
                requests = [
                    JobRequest("bench_noop", {"i": i}) for i in range(first, first + args.per_call)
                ]
                built = time.perf_counter()
                rows = [enqueue_module.job_row(r, REGISTRY) for r in requests]
                validated = time.perf_counter()
                ids += enqueue_module.insert_rows(conn, rows)
                inserted = time.perf_counter()
                parts["requests"].append(built - started)
                parts["validation"].append(validated - built)
                parts["insert"].append(inserted - validated)
            # Only this run's jobs: DATABASE_URL may hold others.
            conn.execute("DELETE FROM pipeline.active_jobs WHERE id = ANY(%s)", (ids,))
    finally:
        if not os.environ.get("DATABASE_URL"):
            stop_embedded(scratch / "pgdata")
        shutil.rmtree(scratch, ignore_errors=True)
    medians = {name: statistics.median(times[WARM_UP:]) * 1000 for name, times in parts.items()}
    total = sum(medians.values())
    print(
        f"bulk enqueue, {args.per_call} jobs a call, median of {args.calls - WARM_UP} calls: "
        + ", ".join(f"{name} {ms:.2f} ms" for name, ms in medians.items())
        + f"; {total:.2f} ms a call, {args.per_call / total * 1000:,.0f} jobs/s"
    )


if __name__ == "__main__":
    main()
