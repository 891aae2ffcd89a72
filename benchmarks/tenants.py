"""Tenants: fairness behind a bulk import, the cost of caps, and a capped tenant's backlog.

    python -m benchmarks.tenants [--big 10000] [--small 20] [--workers 1] [--concurrency 8]

Uses DATABASE_URL, or a throwaway embedded PostgreSQL, and real `pipeline worker` processes.
Prints, each measured in a fresh table:
  * fairness: tenant B's 20 jobs enqueued after tenant A's 10,000; B's wait p50/p99 (enqueue to
    start) and when B's last job started, against the time the drain took;
  * throughput: 10,020 jobs drained with no tenants, and spread over 10 tenants with and
    without a cap of 4 each;
  * backlog: B's 10,000 jobs drained with and without tenant A's 100,000 jobs queued behind a
    cap of 0 (A paused): the claim must not scan A's backlog.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import tempfile
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.drain import percentile, start_workers
from benchmarks.polling import wait_until
from pipeline import JobRequest, enqueue_many
from pipeline.admin.tenants import set_cap
from pipeline.embedded import embedded_url, stop_embedded
from pipeline.migrate import migrate

Conn = psycopg.Connection[Any]


def reset(conn: Conn) -> None:
    conn.execute("TRUNCATE pipeline.jobs, pipeline.tenant_slots, pipeline.tenant_caps")


def drain(
    conn: Conn, url: str, home: Path, args: argparse.Namespace, *, done: int, cap: int | None
) -> float:
    """Run workers until `done` jobs are done; seconds from first claim to last completion."""
    extra = ["--tenant-cap", str(cap)] if cap is not None else []
    workers = start_workers(url, args.workers, args.concurrency, home, extra)
    try:
        # Polled gently: with a 100,000-job backlog in the table, counting too often would eat
        # the CPU the workers need, and measure the benchmark instead of the queue.
        wait_until(
            conn, "SELECT count(*) FROM pipeline.jobs WHERE status = 'done'", done, 900, every=0.1
        )
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.wait(timeout=60)
    row = conn.execute(
        "SELECT extract(epoch FROM max(finished_at) - min(started_at)) FROM pipeline.jobs "
        "WHERE status = 'done'"
    ).fetchone()
    return float(row[0]) if row else float("nan")


def waits_ms(conn: Conn, tenant: str) -> list[float]:
    """Start of each of the tenant's jobs after the drain's first claim: the workers' start-up
    is not the queue's doing."""
    rows = conn.execute(
        "SELECT extract(epoch FROM started_at - (SELECT min(started_at) FROM pipeline.jobs)) * "
        "1000 "
        "FROM pipeline.jobs WHERE tenant_id = %s",
        (tenant,),
    ).fetchall()
    return [float(r[0]) for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--big", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=20)
    parser.add_argument("--backlog", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="pgt-"))
    url = os.environ.get("DATABASE_URL") or embedded_url(scratch / "pgdata")
    import benchmarks.bench_app  # noqa: F401  registers bench_noop for enqueue validation

    def jobs(n: int, tenant: str | None) -> list[JobRequest]:
        return [JobRequest("bench_noop", {"i": i}, tenant_id=tenant) for i in range(n)]

    home = scratch / "home"
    total = args.big + args.small
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)

        # Fairness: B arrives after A's import.
        reset(conn)
        enqueue_many(conn, jobs(args.big, "A"))
        enqueue_many(conn, jobs(args.small, "B"))
        span = drain(conn, url, home, args, done=total, cap=None)
        b_waits = waits_ms(conn, "B")
        a_waits = waits_ms(conn, "A")
        print(
            f"fairness: B's {args.small} jobs behind A's {args.big}, after the first claim: p50 "
            f"{statistics.median(b_waits):.1f} ms, p99 {percentile(b_waits, 0.99):.1f} ms, "
            f"last {max(b_waits):.1f} ms; A's p99 {percentile(a_waits, 0.99):.0f} ms; "
            f"drain {span:.2f} s"
        )

        # Throughput: the same jobs without tenants, and spread over 10 tenants with and
        # without a cap of 4 each (10 x 4 is more than the workers' slots: the cap's cost, not
        # its limit, is what is measured).
        rates = {}
        for label, tenants, cap in (
            ("no tenants", [None], None),
            ("10 tenants, fair", [f"t{i}" for i in range(10)], None),
            ("10 tenants, fair, cap 4", [f"t{i}" for i in range(10)], 4),
        ):
            reset(conn)
            share = total // len(tenants)
            for tenant in tenants:
                enqueue_many(conn, jobs(share, tenant))
            done = share * len(tenants)
            rates[label] = done / drain(conn, url, home, args, done=done, cap=cap)
        base = rates["no tenants"]
        print(
            "throughput: "
            + "; ".join(f"{k} {v:,.0f} jobs/s ({v / base:.2f}x)" for k, v in rates.items())
        )

        # Backlog: A paused (cap 0) with a huge queue must not slow B's claims.
        results = {}
        for label, backlog in (("alone", 0), ("beside", args.backlog)):
            reset(conn)
            if backlog:
                for start in range(0, backlog, 20_000):
                    enqueue_many(conn, jobs(min(20_000, backlog - start), "A"))
                set_cap(conn, "A", "bench_noop", 0)
            enqueue_many(conn, jobs(args.big, "B"))
            conn.execute("ANALYZE pipeline.jobs")
            results[label] = args.big / drain(conn, url, home, args, done=args.big, cap=None)
        print(
            f"backlog: B drains {results['alone']:,.0f} jobs/s alone and "
            f"{results['beside']:,.0f} jobs/s beside A's {args.backlog:,} paused jobs "
            f"(ratio {results['beside'] / results['alone']:.2f})"
        )
    if not os.environ.get("DATABASE_URL"):
        stop_embedded(scratch / "pgdata")
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
