"""Reference figures: pgbench's single-row UPDATE, fdatasync, and pg-pipeline's fairness."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import psycopg

from benchmarks.compare.measure import percentile
from benchmarks.compare.server import Server, run_quiet
from benchmarks.reset import reset
from benchmarks.tenants import drain, waits_ms
from pg_pipeline import JobRequest, enqueue_many

UPDATE = (
    "\\set aid random(1, 100000)\n"
    "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;\n"
)


def pgbench(server: Server, scratch: Path, clients: list[int], seconds: int) -> dict[str, float]:
    """tps of a single-row UPDATE (scale 1: 100,000 rows), per client count; `c16 async` is 16
    clients with synchronous_commit off (what the WAL flush costs)."""
    exe = server.bin("pgbench")
    if exe is None:
        return {}
    script = scratch / "update.sql"
    script.write_text(UPDATE)
    results: dict[str, float] = {}
    with server.database("pgbench") as url:
        run_quiet([exe, "-i", "-s", "1", "-q", url])
        runs = [(f"c{c}", c, "") for c in clients] + [
            (f"c{max(clients)} async", max(clients), "-c synchronous_commit=off")
        ]
        for label, c, options in runs:
            env = {**os.environ, "PGOPTIONS": options}
            cmd = [exe, "-n", "-c", str(c), "-j", str(min(c, 2)), "-T", str(seconds)]
            out = run_quiet([*cmd, "-f", str(script), url], env=env).stdout
            found = re.search(r"tps = ([\d.]+)", out)
            results[label] = float(found.group(1)) if found else float("nan")
    return results


def fdatasync_us(server: Server, scratch: Path) -> float | None:
    """µs per 8 kB write + fdatasync on the scratch directory's disk (pg_test_fsync, 1 s)."""
    exe = server.bin("pg_test_fsync")
    if exe is None:
        return None
    out = run_quiet([exe, "-s", "1", "-f", str(scratch / "fsync.test")]).stdout
    found = re.search(r"fdatasync\s+[\d.,]+ ops/sec\s+([\d.,]+) usecs/op", out)
    return float(found.group(1).replace(",", "")) if found else None


def fairness(server: Server, template: str, home: Path, big: int, small: int) -> float:
    """pg-pipeline: p99 (ms) of tenant B's waits for its `small` jobs enqueued behind tenant
    A's `big`, measured from the drain's first claim, as benchmarks/tenants.py does."""
    with server.database("pgp", template) as url, psycopg.connect(url, autocommit=True) as conn:
        reset(conn)
        enqueue_many(conn, [JobRequest("bench_noop", {"i": i}, tenant_id="A") for i in range(big)])
        enqueue_many(
            conn, [JobRequest("bench_noop", {"i": i}, tenant_id="B") for i in range(small)]
        )
        args = argparse.Namespace(workers=1, concurrency=8)
        drain(conn, url, home, args, done=big + small, cap=None)
        waits = waits_ms(conn, "B")
    return percentile(waits, 0.99) if waits else float("nan")
