"""Flow control's cost: the drain with a rate limit (and tenant weights) against plain claims,
and a worker fleet in front of 10,000 jobs a limit holds back (docs/limits.md).

    flock /tmp/bench.lock python -m benchmarks.flow [--jobs 20000] [--workers 2]
        [--concurrency 16] [--rounds 3] [--only drain|blocked] [--waiting 10000]

Uses DATABASE_URL, or a throwaway embedded PostgreSQL, and real `pipeline worker` processes.
  * drain: the same jobs over 10 tenants, drained by idle workers, in one round each of:
    plain claims (bench_noop); every job charged to one limit per tenant, with a capacity that
    never binds (bench_limited: the admission's whole cost, a locked key row and a bucket per
    claim); and, when this build has tenant weights (`pipeline tenants weight`), weights on
    every tenant, with and without the limit. Jobs/s from the first claim to the last
    completion and CPU per job; ratios to the round's plain drain, medians over the rounds.
  * blocked: --waiting jobs of one tenant behind a limit of 50 per 5 s, two workers with the
    default poll: claims per second while they wait (pipeline.claim's calls, from
    pg_stat_user_functions), the units started per window (never above 50), and how late each
    window's first claim came after the window let more in.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.bench_app import BENCH_LIMIT  # also registers the stages, for enqueue
from benchmarks.compare.cpu import Meter, wait_idle
from benchmarks.compare.server import _postmaster
from benchmarks.drain import percentile, start_workers
from benchmarks.polling import wait_until
from benchmarks.reset import reset
from benchmarks.tenants import medians_line, round_line, span, stop
from pg_pipeline import JobRequest, enqueue_many
from pg_pipeline.admin import tenants as tenants_admin
from pg_pipeline.admin.limits import set_limit
from pg_pipeline.embedded import embedded_url, stop_embedded
from pg_pipeline.migrate import migrate

Conn = psycopg.Connection[Any]
TENANTS = [f"t{i}" for i in range(10)]
#: a capacity no drain reaches: the limit is checked and charged, never binds
UNBOUND = 10**12


def set_weights(conn: Conn, on: bool) -> bool:
    """Weights 1, 2, 4, ... on every tenant (h24-fair's `pipeline tenants weight`), or none;
    False when this build has no weights."""
    set_weight = getattr(tenants_admin, "set_weight", None)
    clear_weight = getattr(tenants_admin, "clear_weight", None)
    if set_weight is None or clear_weight is None:
        return False
    for i, tenant in enumerate(TENANTS):
        if on:
            set_weight(conn, tenant, 2 ** (i % 3))
        else:
            clear_weight(conn, tenant)
    return True


def metered_drain(
    conn: Conn, url: str, home: Path, args: argparse.Namespace, stage: str
) -> tuple[float, float, float]:
    """(jobs/s from the first claim to the last completion, worker and PostgreSQL CPU ms per
    job) for args.jobs jobs of `stage` over the ten tenants, the workers started first, idle,
    and running `stage` alone (a worker with no limited stage never asks about windows)."""
    workers = start_workers(url, args.workers, args.concurrency, home, ["--stage", stage])
    try:
        wait_idle([w.pid for w in workers])
        poller = conn.execute("SELECT pg_backend_pid()").fetchone()
        meter = Meter(
            [w.pid for w in workers], _postmaster(conn), frozenset({poller[0]} if poller else ())
        )
        before = meter.read()
        share = args.jobs // len(TENANTS)
        enqueue_many(
            conn,
            [JobRequest(stage, {"i": i}, tenant_id=t) for t in TENANTS for i in range(share)],
        )
        wait_until(
            conn,
            "SELECT count(*) FROM pipeline.jobs WHERE status = 'done'",
            share * len(TENANTS),
            900,
            every=0.1,
        )
        usage = Meter.usage(before, meter.read())
    finally:
        stop(workers)
    n = share * len(TENANTS)
    return n / span(conn), 1000 * usage.worker_s / n, 1000 * usage.postgres_s / n


def drains(conn: Conn, url: str, home: Path, args: argparse.Namespace) -> None:
    weights = set_weights(conn, False)
    configs = [("plain", "bench_noop", False), ("one limit", "bench_limited", False)]
    if weights:
        configs += [
            ("weights", "bench_noop", True),
            ("one limit + weights", "bench_limited", True),
        ]
    else:
        print("drain: this build has no tenant weights (h24-fair): measured without them")
    ratios: dict[str, list[float]] = {label: [] for label, _, _ in configs}
    cpu: dict[str, list[tuple[float, float]]] = {label: [] for label, _, _ in configs}
    for round_no in range(1, args.rounds + 1):
        rates = {}
        for label, stage, weighted in configs:
            reset(conn)
            set_limit(conn, BENCH_LIMIT, UNBOUND, per=60)
            set_weights(conn, weighted)
            rates[label], worker_ms, postgres_ms = metered_drain(conn, url, home, args, stage)
            cpu[label].append((worker_ms, postgres_ms))
        base = rates["plain"]
        for label, rate in rates.items():
            ratios[label].append(rate / base)
        print(f"drain, round {round_no}: " + round_line(rates, base, cpu), flush=True)
    print(
        f"drain, medians of {args.rounds} round(s), {args.jobs:,} jobs over 10 tenants, "
        f"{args.workers} workers x {args.concurrency}: " + medians_line(ratios, cpu, 3)
    )


def claim_calls(conn: Conn) -> int:
    row = conn.execute(
        "SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions "
        "WHERE schemaname = 'pipeline' AND funcname = 'claim'"
    ).fetchone()
    return int(row[0]) if row else 0


def blocked(conn: Conn, url: str, home: Path, args: argparse.Namespace) -> None:
    """--waiting jobs behind 50 per 5 s: claims per second while they wait, and how soon
    after each window moves its jobs start."""
    capacity, per, watch_s = 50, 5, args.watch
    reset(conn)
    conn.execute("ALTER SYSTEM SET track_functions = 'pl'")
    conn.execute("SELECT pg_reload_conf()")
    set_limit(conn, BENCH_LIMIT, capacity, per=per)
    workers = start_workers(url, args.workers, args.concurrency, home, ["--stage", "bench_limited"])
    try:
        wait_idle([w.pid for w in workers])
        enqueue_many(
            conn,
            [JobRequest("bench_limited", {"i": i}, tenant_id="A") for i in range(args.waiting)],
        )
        wait_until(conn, "SELECT count(*) FROM pipeline.jobs WHERE status = 'done'", capacity, 60)
        time.sleep(0.5)  # stats are sent at the end of each transaction, within 0.5 s
        calls_before, started = claim_calls(conn), time.monotonic()
        time.sleep(watch_s)  # the measured stretch: the fleet blocked, windows moving
        calls = claim_calls(conn) - calls_before
        elapsed = time.monotonic() - started
    finally:
        stop(workers)
        conn.execute("ALTER SYSTEM RESET track_functions")
        conn.execute("SELECT pg_reload_conf()")
    starts = [
        float(r[0])
        for r in conn.execute(
            "SELECT extract(epoch FROM started_at) FROM pipeline.jobs "
            "WHERE started_at IS NOT NULL ORDER BY started_at"
        ).fetchall()
    ]
    bursts: list[list[float]] = []
    for s in starts:
        if bursts and s - bursts[-1][-1] < 1.0:
            bursts[-1].append(s)
        else:
            bursts.append([s])
    # A window lets more in once the previous burst's second is `per` seconds old.
    late_ms = [1000 * (b[0] - (int(prev[0]) + per)) for prev, b in itertools.pairwise(bursts)]
    windows = [
        sum(1 for s in starts if w <= int(s) < w + per)
        for w in range(int(starts[0]) - per + 1, int(starts[-1]) + 1)
    ]
    print(
        f"blocked: {args.waiting:,} jobs behind {capacity} per {per} s, {args.workers} workers "
        f"x {args.concurrency}: {calls / elapsed:.2f} claims/s over {elapsed:.0f} s "
        f"({calls} claims); {len(starts)} started in {len(bursts)} bursts, at most "
        f"{max(windows)} in any {per} s window; each window's first start after it moved: "
        f"p50 {statistics.median(late_ms):.0f} ms, p95 {percentile(late_ms, 0.95):.0f} ms, "
        f"max {max(late_ms):.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.flow")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--waiting", type=int, default=10_000)
    parser.add_argument("--watch", type=float, default=30.0, help="seconds blocked, measured")
    parser.add_argument("--only", choices=["drain", "blocked"])
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="pgb-flow-"))
    url = os.environ.get("DATABASE_URL") or embedded_url(scratch / "pgdata")
    home = scratch / "home"
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)
            if args.only in (None, "drain"):
                drains(conn, url, home, args)
            if args.only in (None, "blocked"):
                blocked(conn, url, home, args)
    finally:
        if not os.environ.get("DATABASE_URL"):
            stop_embedded(scratch / "pgdata")
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
