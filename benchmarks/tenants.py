"""Tenants: fairness behind a bulk import, the cost of caps, and a capped tenant's backlog.

    python -m benchmarks.tenants [--big 10000] [--small 20] [--workers 1] [--concurrency 8]
                                 [--only throughput] [--rounds 1] [--cap 1000] [--statements 0]

Uses DATABASE_URL, or a throwaway embedded PostgreSQL, and real `pipeline worker` processes.
Prints, each measured in a fresh table (`--only` picks parts: fairness, throughput, backlog):
  * fairness: tenant B's 20 jobs enqueued after tenant A's 10,000; B's wait p50/p99 (enqueue to
    start) and when B's last job started, against the time the drain took;
  * throughput: 10,020 jobs drained with no tenants, and spread over 10 tenants: uncapped,
    capped above what the workers hold (`--cap`, 1,000 each: what counting slots costs), and
    capped at 4 each (what the caps' limit costs), with the CPU per job of the workers and of
    PostgreSQL, each drain started from emptied tables and settled (a CHECKPOINT, no
    autovacuum running); `--rounds` drains the four that many times, in reversed order every
    second round, each round's ratios measured minutes apart at most (the machine's load
    drifts), then their medians; `--statements N` prints each drain's N statements of most
    server time per job, nested ones (in functions and triggers) included, from
    pg_stat_statements (loaded into the embedded server for it, which costs every statement a
    little: compare ratios measured without it);
  * backlog: B's 10,000 jobs drained with and without tenant A's 100,000 jobs queued behind a
    cap of 0 (A paused): the claim must not scan A's backlog.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.compare.cpu import Meter, wait_idle
from benchmarks.compare.server import _postmaster
from benchmarks.drain import percentile, start_workers
from benchmarks.polling import wait_until
from benchmarks.reset import reset
from benchmarks.settle import settle
from pg_pipeline import JobRequest, enqueue_many
from pg_pipeline.admin.tenants import set_cap
from pg_pipeline.embedded import embedded_url, restart_embedded, stop_embedded
from pg_pipeline.migrate import migrate

Conn = psycopg.Connection[Any]
#: A throughput drain: its label, the tenants its jobs are spread over, the workers' cap.
Config = tuple[str, list[str | None], int | None]
PARTS = ["fairness", "throughput", "backlog"]


def jobs(n: int, tenant: str | None) -> list[JobRequest]:
    return [JobRequest("bench_noop", {"i": i}, tenant_id=tenant) for i in range(n)]


def stop(workers: list[subprocess.Popen[bytes]]) -> None:
    for w in workers:
        w.send_signal(signal.SIGTERM)
    for w in workers:
        w.wait(timeout=60)


def span(conn: Conn) -> float:
    """Seconds from the first claim to the last completion."""
    row = conn.execute(
        "SELECT extract(epoch FROM max(finished_at) - min(started_at)) FROM pipeline.jobs "
        "WHERE status = 'done'"
    ).fetchone()
    return float(row[0]) if row else float("nan")


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
        stop(workers)
    return span(conn)


def metered_drain(
    conn: Conn,
    url: str,
    home: Path,
    args: argparse.Namespace,
    jobs: list[JobRequest],
    cap: int | None,
    label: str,
) -> tuple[float, float, float]:
    """Drain `jobs` with workers started first and idle, so that their start-up is not counted:
    (jobs/s from the first claim to the last completion, worker and PostgreSQL CPU ms per job).
    The jobs go in one statement: the workers find every tenant's at once. The server settles
    first: the drain before this one leaves autovacuum work on the tables it wrote (the history,
    the rollups), which ran in whichever drain came next and counted as its CPU."""
    extra = ["--tenant-cap", str(cap)] if cap is not None else []
    workers = start_workers(url, args.workers, args.concurrency, home, extra)
    try:
        wait_idle([w.pid for w in workers])
        settle(url)
        if args.statements:
            conn.execute("SELECT pg_stat_statements_reset()")
        poller = conn.execute("SELECT pg_backend_pid()").fetchone()
        meter = Meter(
            [w.pid for w in workers], _postmaster(conn), frozenset({poller[0]} if poller else ())
        )
        before = meter.read()
        enqueue_many(conn, jobs)
        wait_until(
            conn,
            "SELECT count(*) FROM pipeline.jobs WHERE status = 'done'",
            len(jobs),
            900,
            every=0.1,
        )
        usage = Meter.usage(before, meter.read())
    finally:
        stop(workers)
    n = len(jobs)
    if args.statements:
        statements(conn, label, n, args.statements)
    return n / span(conn), 1000 * usage.worker_s / n, 1000 * usage.postgres_s / n


def track_statements(conn: Conn, pgdata: Path | None) -> None:
    """Load pg_stat_statements, tracking nested statements too (the claim's parts, the
    triggers'): into the embedded server at `pgdata` by a restart, else it must be loaded."""
    if pgdata is not None:
        conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        conn.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
        restart_embedded(pgdata)


def statements(conn: Conn, label: str, n: int, top: int) -> None:
    """The `top` statements of most execution time since the last call, in ms per job of the
    `n` drained. A nested statement's time is inside its caller's as well."""
    print(f"  statements of the drain {label!r}:")
    rows = conn.execute(
        "SELECT total_exec_time, calls, rows, toplevel, "
        "left(regexp_replace(query, '\\s+', ' ', 'g'), 110) FROM pg_stat_statements "
        "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
        "ORDER BY total_exec_time DESC LIMIT %s",
        (top,),
    ).fetchall()
    for total, calls, got, toplevel, query in rows:
        print(
            f"    {total / n:7.4f} ms/job {calls:7d} calls {got / max(1, calls):7.1f} rows/call "
            f"{'top ' if toplevel else 'nest'} {query}"
        )
    conn.execute("SELECT pg_stat_statements_reset()")


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


def fairness(conn: Conn, url: str, home: Path, args: argparse.Namespace) -> None:
    """Tenant B's few jobs enqueued after tenant A's import: how long B waits."""
    total = args.big + args.small
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


def throughput(conn: Conn, url: str, home: Path, args: argparse.Namespace) -> None:
    """The same jobs without tenants, and spread over 10 tenants: uncapped, capped above what
    the workers ever hold (the cost of the caps' accounting), and capped at 4 each (their
    limit: a worker holds a slot from the claim to the acknowledgement, prefetched and settling
    jobs too, some hundreds of them when jobs take no time, so 10 x 4 slots bound the drain).
    Every round drains them one after the other, each from emptied tables (reset) and a
    settled server, in the order in_turn gives; ratios are to the round's own untenanted
    drain."""
    ten = [f"t{i}" for i in range(10)]
    configs: list[Config] = [
        ("no tenants", [None], None),
        ("10 tenants, fair", [*ten], None),
        (f"10 tenants, fair, cap {args.cap}", [*ten], args.cap),
        ("10 tenants, fair, cap 4 (binds)", [*ten], 4),
    ]
    total = args.big + args.small
    ratios: dict[str, list[float]] = {label: [] for label, _, _ in configs}
    cpu: dict[str, list[tuple[float, float]]] = {label: [] for label, _, _ in configs}
    for round_no in range(1, args.rounds + 1):
        drained = {}
        for label, tenants, cap in in_turn(configs, round_no):
            reset(conn)
            share = total // len(tenants)
            batch = [job for tenant in tenants for job in jobs(share, tenant)]
            drained[label], worker_ms, postgres_ms = metered_drain(
                conn, url, home, args, batch, cap, label
            )
            cpu[label].append((worker_ms, postgres_ms))
        rates = {label: drained[label] for label, _, _ in configs}
        base = rates["no tenants"]
        for label, rate in rates.items():
            ratios[label].append(rate / base)
        print(f"throughput, round {round_no}: " + round_line(rates, base, cpu), flush=True)
    if args.rounds > 1:
        print(f"throughput, medians of {args.rounds} rounds: " + medians_line(ratios, cpu, 2))


def in_turn(configs: list[Config], round_no: int) -> list[Config]:
    """Round `round_no`'s drains (from 1): the configurations in order, reversed every second
    round, so that each drains as often early as late in a round (the first drain after the
    server's start, the drain after the binding cap's) and the load's drift in a round falls
    on all alike."""
    return configs if round_no % 2 else configs[::-1]


def round_line(
    rates: dict[str, float], base: float, cpu: dict[str, list[tuple[float, float]]]
) -> str:
    """One round's drains: each configuration's rate, its ratio to `base` and its last CPU."""
    return "; ".join(
        f"{k} {v:,.0f} jobs/s ({v / base:.2f}x, CPU per job: worker "
        f"{cpu[k][-1][0]:.3f} ms, postgres {cpu[k][-1][1]:.3f} ms)"
        for k, v in rates.items()
    )


def medians_line(
    ratios: dict[str, list[float]], cpu: dict[str, list[tuple[float, float]]], digits: int
) -> str:
    """Every round's medians: each configuration's ratio and CPU per job."""
    return "; ".join(
        f"{label} {statistics.median(r):.{digits}f}x (worker "
        f"{statistics.median(c[0] for c in cpu[label]):.3f} ms, postgres "
        f"{statistics.median(c[1] for c in cpu[label]):.3f} ms per job)"
        for label, r in ratios.items()
    )


def backlog(conn: Conn, url: str, home: Path, args: argparse.Namespace) -> None:
    """A paused (cap 0) with a huge queue must not slow B's claims."""
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--big", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=20)
    parser.add_argument("--backlog", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--only", action="append", choices=PARTS, help="a part to run (again for more; default all)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="throughput rounds, alternated")
    parser.add_argument(
        "--cap", type=int, default=1000, help="the throughput's cap that does not bind, per tenant"
    )
    parser.add_argument(
        "--statements", type=int, default=0, help="print each drain's N costliest statements"
    )
    args = parser.parse_args()
    parts = args.only or PARTS

    scratch = Path(tempfile.mkdtemp(prefix="pgt-"))
    url = os.environ.get("DATABASE_URL") or embedded_url(scratch / "pgdata")
    import benchmarks.bench_app  # noqa: F401  registers bench_noop for enqueue validation

    home = scratch / "home"
    if args.statements:
        with psycopg.connect(url, autocommit=True) as conn:
            track_statements(conn, None if os.environ.get("DATABASE_URL") else scratch / "pgdata")
    with psycopg.connect(url, autocommit=True) as conn:
        if args.statements:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        migrate(conn)
        if "fairness" in parts:
            fairness(conn, url, home, args)
        if "throughput" in parts:
            throughput(conn, url, home, args)
        if "backlog" in parts:
            backlog(conn, url, home, args)
    if not os.environ.get("DATABASE_URL"):
        stop_embedded(scratch / "pgdata")
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
