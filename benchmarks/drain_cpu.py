"""pg-pipeline's drain alone, with the worker's and Postgres's CPU per job, in one configuration.

    flock /tmp/bench.lock python -m benchmarks.drain_cpu [--workers 2] [--concurrency 16]
        [--runs 3] [--jobs 20000]

The same measurement as `python -m benchmarks.compare --only drain` (benchmarks/compare/
measure.py: idle workers, one insert, CPU from /proc from its commit to the last job), without
the sweep and the other libraries: for before/after figures of a change to the worker's hot
path. Uses DATABASE_URL, or an embedded PostgreSQL in a scratch directory.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from benchmarks.compare import measure, server
from benchmarks.compare.pgpipeline_side import PgPipelineSide
from benchmarks.compare.sides import WorkerConfig


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.drain_cpu")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16, help="0: the worker's default")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=20_000)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="pgb-cpu-"))
    srv = server.start(scratch)
    side = PgPipelineSide(scratch, args.jobs)
    flags = () if args.concurrency == 0 else ("--concurrency", str(args.concurrency))
    config = WorkerConfig(f"{args.workers} proc, c={args.concurrency}", args.workers, flags)
    try:
        side.install(srv.make_template(side.template))
        srv.seal_template(side.template)
        drains = []
        for n in range(args.runs):
            drain = measure.drain(srv, side, config, args.jobs)
            drains.append(drain)
            print(
                f"run {n + 1}: {drain.jobs_s:,.0f} jobs/s, worker {drain.worker_ms:.4f} ms/job, "
                f"postgres {drain.postgres_ms:.4f} ms/job, "
                f"other load {drain.usage.other_busy_pct:.0f} %",
                flush=True,
            )
        print(
            f"median of {args.runs}, {config.label}: "
            f"{statistics.median(d.jobs_s for d in drains):,.0f} jobs/s, worker "
            f"{statistics.median(d.worker_ms for d in drains):.4f} ms/job, postgres "
            f"{statistics.median(d.postgres_ms for d in drains):.4f} ms/job"
        )
    finally:
        srv.stop([side.template])
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
