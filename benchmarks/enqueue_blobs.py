"""What recording blob references costs an enqueue (pipeline.blob_refs, migration 0029).

    python -m benchmarks.enqueue_blobs [--singles 2000] [--calls 40] [--per-call 1000] [--keys]

Uses DATABASE_URL, or a throwaway embedded PostgreSQL. Enqueues `--singles` jobs one call
each, then `--calls` bulk calls of `--per-call` jobs, on an autocommit connection, payloads
{"i": n}, or with `--keys` {"i": n, "blob_key": <a key of its own>}. Prints, per single call
and per bulk call (means, the first tenth of the calls left out as warm-up): wall time, this
process's CPU and the server backend's CPU (read from /proc, so the server must run on this
machine), with synchronous_commit off. To compare two commits, run this in each
alternately, since the machine's speed drifts.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from pydantic import BaseModel

from benchmarks.server import benchmark_server
from pg_pipeline import Context, JobRequest, enqueue, enqueue_many, stage
from pg_pipeline.migrate import migrate

ROUND = 100  #: single calls per sample
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


class Doc(BaseModel):
    i: int
    blob_key: str | None = None


@stage("bench_blob", lease=60)
def bench_blob(job: Doc, ctx: Context) -> None:
    return None


def payload(n: int, keys: bool) -> dict[str, object]:
    if not keys:
        return {"i": n}
    digest = hashlib.sha256(str(n).encode()).hexdigest()
    return {"i": n, "blob_key": f"sha256/{digest[:2]}/{digest}"}


def backend_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S  # utime, stime


def measure(
    conn: psycopg.Connection[Any], call: Callable[[], object], times: int
) -> tuple[float, ...]:
    pid = conn.info.backend_pid
    wall, cpu, server = time.perf_counter(), time.process_time(), backend_cpu_s(pid)
    for _ in range(times):
        call()
    return (
        time.perf_counter() - wall,
        time.process_time() - cpu,
        backend_cpu_s(pid) - server,
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.enqueue_blobs")
    parser.add_argument("--singles", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--per-call", type=int, default=1000)
    parser.add_argument("--keys", action="store_true", help="every payload names a blob")
    args = parser.parse_args()
    counter = iter(range(10**9))
    singles: list[tuple[float, ...]] = []
    bulks: list[tuple[float, ...]] = []
    with benchmark_server("pgblobs-") as url, psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        # What is measured is the statements' work, not the wait for the WAL's flush.
        conn.execute("SET synchronous_commit = off")
        for _ in range(args.singles // ROUND):
            singles.append(
                measure(
                    conn,
                    lambda: enqueue(conn, "bench_blob", payload(next(counter), args.keys)),
                    ROUND,
                )
            )
        for _ in range(args.calls):
            requests = [
                JobRequest("bench_blob", payload(next(counter), args.keys))
                for _ in range(args.per_call)
            ]
            bulks.append(measure(conn, functools.partial(enqueue_many, conn, requests), 1))
        conn.execute("DELETE FROM pipeline.active_jobs WHERE type = 'bench_blob'")

    def per_call(samples: list[tuple[float, ...]], per: int, unit: float) -> str:
        # Means, not medians: the backend's CPU comes in clock ticks (10 ms), which only a sum
        # over many calls resolves.
        kept = samples[len(samples) // 10 :]
        calls = len(kept) * per
        wall, cpu, server = (sum(s[i] for s in kept) / calls * unit for i in range(3))
        return f"wall {wall:.1f}, client CPU {cpu:.1f}, server CPU {server:.1f}"

    what = "with a blob key each" if args.keys else "without blob keys"
    print(f"payloads {what}")
    print(f"  single enqueue, us a call: {per_call(singles, ROUND, 1e6)}")
    print(f"  bulk of {args.per_call}, ms a call: {per_call(bulks, 1, 1e3)}")


if __name__ == "__main__":
    main()
