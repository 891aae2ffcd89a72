"""Flat at scale: the queue's figures with millions of finished jobs in the history against an
empty database.

    python -m benchmarks.scale [--finished 100000] [--days 30] [--day-volume 1000000]
        [--rounds 3] [--jobs 20000] [--indexes after|before] [--pgdata DIR] [--keep]
        [--reuse DIR] [--no-settle] [--statements N] [--prune-days N] [--prune-rest TIMES]
        [--control-s S] [--worker-arg ARG] [--runs-file FILE]

Two databases on one server (DATABASE_URL's, or a throwaway embedded PostgreSQL under --pgdata):
`empty` (the schema alone) and `full`, loaded inside the server with generate_series (no API,
no client round trip per row) with `--finished` finished jobs spread evenly over `--days` UTC
days of the history's partitions (2 to days + 1 days ago) plus `--day-volume` jobs finished
within the last 24 hours, which the status views read. Indexes are built after the load by
default (`--indexes before` keeps them, to compare), then VACUUM ANALYZE. Prints the load's time
and the history's size.

Then, in rounds alternating between the two databases (medians over rounds): a drain of
`--jobs` no-op jobs by real `pipeline worker` processes (the rate, and the start-up from process
start to the first claim by the database's clock), the wake latency of single jobs sent to the
idle workers, the claim's latency (JobStore.claim of 100 jobs, timed call by call), `pipeline
status` (the CLI's wall time and its main statement's execution time from EXPLAIN ANALYZE) and
the dashboard's overview and jobs pages (its ASGI app, in process). Last, in `full` alone, a
drain beside a `pipeline prune --older-than` that drops the oldest `--prune-days` days
(`--prune-rest TIMES` passed on as the prune's `--rest`, to compare its resting with full speed;
without it, the prune's own default). `--control-s S` runs, in its place, a control: the same
drain, fed the same way, for S seconds with no prune. Either drain is marked every second
(benchmarks/drain_windows.py) and, with `--runs-file FILE`, appended there; prune and control
runs alternated into one file (`--rounds 0` each, a run per lock hold) are reported in pairs: the
prune run's rate before, beside and after the prune against the control's at the same offsets
from the drain's start, with each window's other load. The drain slows by itself over minutes,
so a window before the prune favours a short prune and one after it a long one; the control at
the same offsets does not. Every drain's rate by 30 s spans is printed, to see it drift.
Prints a markdown table: figure, empty, full, ratio (not with `--rounds 0`).

`--pgdata DIR --keep` leaves the loaded server behind (the load's figures in DIR/scale-load.json);
`--reuse DIR` runs the rounds on it again without loading (the `empty` database is made afresh,
`full` keeps its history, its queue emptied, and the load's --finished, --days and
--day-volume; a prune drops its days for good): a 100 M load takes ten minutes and 30 GB. Every
round starts settled (`--no-settle`: as the load left it): a CHECKPOINT, then a wait until no
autovacuum worker runs and the checkpointer is idle, so that a round measures the queue and not
the aftermath of the load or of the round before; the time it took and what ran are printed.
`--statements N` loads pg_stat_statements (track = all, track_io_timing: into the embedded
server by a restart) and prints, for the drains, wakes and claims of every round summed (their
worker start-up included; the status and dashboard reads left out), the N statements of most
time in `full` and the N of most shared blocks read, each beside its figures in `empty`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from benchmarks.compare.cpu import Meter, Reading
from benchmarks.compare.server import _postmaster
from benchmarks.drain import REPO, percentile, start_workers
from benchmarks.drain_windows import (
    CONTROL,
    MARK_EVERY_S,
    PRUNE,
    FedDrain,
    Point,
    append_run,
    done_by_mark,
    pairs_said,
    rate_by_span,
    read_runs,
    windows,
)
from benchmarks.polling import wait_until
from benchmarks.settle import settle, settled_said
from pg_pipeline.commands.api import rest_arg
from pg_pipeline.db import make_pool
from pg_pipeline.embedded import embedded_url, restart_embedded, stop_embedded
from pg_pipeline.history import fold_rollup_shards
from pg_pipeline.migrate import migrate
from pg_pipeline.queries import Q
from pg_pipeline.store import JobStore

WORKERS = 2
CONCURRENCY = 8
CLAIM_BATCH = 100
STAGE = "bench_noop"
#: The loaded jobs' stages, a job's taken by its id: OCR twice as often as the others.
LOADED_STAGES = ("ocr", "ocr", "extract", "classify", "upload")
#: Distinct tenants among the tenanted runs (one run in ten).
TENANTS = 100
#: Jobs per run: a root and its children, consecutive ids.
RUN_SIZE = 10
#: One job in FAILED_EVERY failed, with an error.
FAILED_EVERY = 50
DAY_S = 86_400.0
EMPTY = "empty"
FULL = "full"
#: The drain beside the prune's window without it before the prune starts, seconds: the drain's
#: rate drifts over minutes, so the rate beside the prune is held against one on each side.
PRUNE_BEFORE_S = 30.0
#: The longest window without the prune after it, seconds: a resting prune takes minutes, and a
#: window as long again kept the lock twice as long for no better a rate.
PRUNE_AFTER_MAX_S = 120.0
#: The load's figures, beside the data directory of a server kept for --reuse.
LOAD_FILE = "scale-load.json"


@dataclass(frozen=True)
class Day:
    """One day of loaded history: `ago` UTC days before today, jobs with ids first..last."""

    ago: int
    first: int
    count: int

    @property
    def last(self) -> int:
        return self.first + self.count - 1


def plan_days(total: int, days: int, *, first_ago: int = 2, first_id: int = 1) -> list[Day]:
    """`total` jobs spread over `days` consecutive days, the oldest first, ending `first_ago`
    days before today (the last 24 hours are the day's volume, loaded apart). Ids run on from
    `first_id` in time order; the days that cannot be even take one job more, oldest first."""
    if days < 1:
        raise ValueError("at least one day")
    share, extra = divmod(total, days)
    plan: list[Day] = []
    next_id = first_id
    for i in range(days):
        count = share + (1 if i < extra else 0)
        plan.append(Day(ago=first_ago + days - 1 - i, first=next_id, count=count))
        next_id += count
    return [day for day in plan if day.count > 0]


def prune_older_than_days(days: int, first_ago: int, drop: int) -> int:
    """The N of `--older-than Nd` that leaves the `drop` oldest of `days` loaded days (the
    newest `first_ago` days ago) wholly past the cutoff, and no other: the day `ago` days back
    ends at today - ago + 1, which is at or before now - N days exactly when ago >= N + 1 (now is
    past today's midnight), and the oldest day is first_ago + days - 1 days back."""
    older_than = first_ago + days - 1 - drop
    if drop < 1 or older_than < 1:
        raise ValueError(f"drop 1..{days + first_ago - 2} days: the last 24 hours stay")
    return older_than


def ratio(empty: float, full: float) -> float:
    """full / empty; nan when the empty figure is 0 (nothing to compare with)."""
    return full / empty if empty else float("nan")


def execution_ms(plan: Sequence[str]) -> float:
    """The "Execution Time: X ms" of an EXPLAIN ANALYZE's text."""
    for line in plan:
        if line.strip().startswith("Execution Time:"):
            return float(line.split(":", 1)[1].split()[0])
    raise ValueError("no Execution Time in the plan")


def markdown_table(
    rows: Sequence[tuple[str, float, float]], digits: Callable[[float], int] | None = None
) -> str:
    """figure | empty | full | ratio, one row per figure; figures of 100 and more without
    decimals, smaller ones with two."""

    def shown(value: float) -> str:
        if value != value:  # nan
            return "-"
        places = digits(value) if digits else (0 if abs(value) >= 100 else 2)
        return f"{value:,.{places}f}"

    lines = ["| figure | empty | with history | ratio |", "|---|---:|---:|---:|"]
    for name, empty, full in rows:
        lines.append(f"| {name} | {shown(empty)} | {shown(full)} | {ratio(empty, full):.2f} |")
    return "\n".join(lines)


def median_by_figure(rounds: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the rounds that measured it."""
    names = {name for figures in rounds for name in figures}
    return {
        name: statistics.median(figures[name] for figures in rounds if name in figures)
        for name in names
    }


# ---- the load --------------------------------------------------------------------------------

#: A finished job of the load: `g` is its id, `t` its finish time. Whole runs are tenanted,
#: every root's children name it as root and parent.
LOAD_SELECT = """
    SELECT g, (%(stages)s::text[])[1 + g %% %(nstages)s],
           CASE WHEN (g - 1) / %(run)s %% 10 = 0
                THEN 't' || ((g - 1) / (%(run)s * 10) %% %(tenants)s) END,
           jsonb_build_object('doc', (g - 1) / %(run)s, 'page', (g - 1) %% %(run)s),
           CASE WHEN g %% %(failed)s = 7 THEN 'failed' ELSE 'done' END,
           CASE WHEN g %% %(failed)s = 7 THEN 5 ELSE 1 END,
           t - interval '3 seconds', %(worker)s::uuid,
           CASE WHEN g %% %(failed)s = 7 THEN 'RuntimeError: page ' || g || ' failed' END,
           CASE WHEN (g - 1) %% %(run)s <> 0 THEN g - (g - 1) %% %(run)s END,
           CASE WHEN (g - 1) %% %(run)s <> 0 THEN g - (g - 1) %% %(run)s END,
           t - interval '3 seconds', t - interval '1 second', t,
           CASE WHEN g %% %(failed)s = 7 THEN 5 ELSE 1 END
    FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS g,
         LATERAL (SELECT %(start)s::timestamptz
                         + (g - %(first)s) * %(step)s * interval '1 second') AS at(t)
"""
LOAD_COLUMNS = (
    "id, type, tenant_id, payload, status, attempts, run_after, worker_id, last_error, "
    "parent_id, root_id, created_at, started_at, finished_at, claims"
)


@dataclass
class Load:
    seconds: float = 0.0  #: the rows
    index_seconds: float = 0.0  #: the indexes built after them (0 when kept during)
    vacuum_seconds: float = 0.0  #: VACUUM ANALYZE
    rows: int = 0
    partitions: int = 0
    history_bytes: int = 0  #: every partition with its indexes and TOAST
    database_bytes: int = 0


def load_params(day_start: datetime, first: int, count: int) -> dict[str, Any]:
    return {
        "stages": list(LOADED_STAGES),
        "nstages": len(LOADED_STAGES),
        "run": RUN_SIZE,
        "tenants": TENANTS,
        "failed": FAILED_EVERY,
        "worker": str(uuid.UUID(int=1)),
        "first": first,
        "last": first + count - 1,
        "start": day_start,
        "step": DAY_S / count,
    }


def load_history(
    url: str, finished: int, days: int, day_volume: int, *, indexes_after: bool
) -> Load:
    load = Load()
    plan = plan_days(finished, days)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '512MB'")
        [(today, now)] = conn.execute("SELECT (now() AT TIME ZONE 'UTC')::date, now()").fetchall()
        oldest = today - timedelta(days=max((d.ago for d in plan), default=1))
        conn.execute(
            "SELECT pipeline.make_history_partitions(%s, %s)", (oldest, today + timedelta(7))
        )
        index_defs: list[tuple[str, str]] = []
        if indexes_after:
            rows = conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes "
                "WHERE schemaname = 'pipeline' AND tablename = 'job_history'"
            ).fetchall()
            index_defs = [(str(row[0]), str(row[1])) for row in rows]
            for name, _ in rows:
                conn.execute(sql.SQL("DROP INDEX pipeline.{}").format(sql.Identifier(name)))
        started = time.perf_counter()
        for day in plan:
            part = sql.Identifier("job_history_" + (today - timedelta(day.ago)).strftime("%Y%m%d"))
            day_start = datetime.combine(
                today - timedelta(day.ago), datetime.min.time(), now.tzinfo
            )
            insert(
                conn,
                sql.SQL("pipeline.{}").format(part),
                load_params(day_start, day.first, day.count),
            )
            print(
                f"  day -{day.ago}: {day.count:,} jobs, {time.perf_counter() - started:.0f} s",
                flush=True,
            )
        if day_volume:
            # The last 24 hours, oldest first, through the parent: they straddle two days.
            recent = load_params(now - timedelta(days=1), finished + 1, day_volume)
            insert(conn, sql.SQL("pipeline.job_history"), recent)
            # A server that finished these jobs over the day would have folded each hour's
            # rollup shards within the hour (the Partitions service, hourly): the load does it
            # once, so the first worker to start does not fold the whole day inside a drain.
            fold_rollup_shards(conn)
        conn.execute(
            "SELECT setval('pipeline.active_jobs_id_seq', %s)", (finished + day_volume + 1,)
        )
        # Rows written straight into a day escape the rollups' triggers: the days they are in,
        # by stage and outcome, go where a jobs list by stage looks for them (as migration 0030
        # counts a history; sql/functions/finished_span.sql).
        conn.execute(
            "INSERT INTO pipeline.finished_days (stage, status, day) "
            "SELECT DISTINCT type, status, "
            "date_bin('1 day', finished_at, timestamptz '2000-01-01 00:00+00') "
            "FROM pipeline.job_history ON CONFLICT DO NOTHING"
        )
        load.seconds = time.perf_counter() - started
        load.rows = finished + day_volume
        started = time.perf_counter()
        build_indexes(conn, index_defs)
        [(invalid,)] = conn.execute(
            "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE NOT i.indisvalid AND c.relnamespace = 'pipeline'::regnamespace"
        ).fetchall()
        if invalid:
            raise RuntimeError(f"{invalid} indexes of the history left invalid")
        load.index_seconds = time.perf_counter() - started
        started = time.perf_counter()
        conn.execute("VACUUM ANALYZE pipeline.job_history")
        load.vacuum_seconds = time.perf_counter() - started
        [(partitions, history_bytes, database_bytes)] = conn.execute(
            "SELECT count(*), coalesce(sum(pg_total_relation_size(inhrelid)), 0), "
            "pg_database_size(current_database()) "
            "FROM pg_inherits WHERE inhparent = 'pipeline.job_history'::regclass"
        ).fetchall()
    load.partitions, load.history_bytes = int(partitions), int(history_bytes)
    load.database_bytes = int(database_bytes)
    return load


def build_indexes(conn: psycopg.Connection[Any], index_defs: Sequence[tuple[str, str]]) -> None:
    """The history's indexes, dropped for the load, made again: each day's first, named as
    make_history_partitions names them (job_history_YYYYMMDD_tenant), then the parent's, which
    attaches them (pg_get_indexdef says ON ONLY, which would leave the days without any)."""
    days = [
        str(row[0])
        for row in conn.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'pipeline.job_history'::regclass ORDER BY c.relname"
        )
    ]
    for day in days:
        for name, definition in index_defs:
            head = f"INDEX {name} ON ONLY pipeline.job_history "
            if head not in definition:
                raise RuntimeError(f"an index definition of an unexpected form: {definition}")
            suffix = name.removeprefix("job_history_")
            conn.execute(definition.replace(head, f"INDEX {day}_{suffix} ON pipeline.{day} "))
    for _, definition in index_defs:
        conn.execute(definition.replace(" ON ONLY ", " ON "))


def insert(conn: psycopg.Connection[Any], table: sql.Composable, params: dict[str, Any]) -> None:
    conn.execute(
        sql.SQL("INSERT INTO {} ({}) ").format(table, sql.SQL(LOAD_COLUMNS)) + sql.SQL(LOAD_SELECT),
        params,
    )


# ---- settling and the statements -------------------------------------------------------------

#: Statements' figures summed over rounds, by database and normalised text: the query ids of
#: the same statement differ between databases (they hash the relations' oids).
STATEMENT_FIGURES = ("calls", "ms", "rows", "blks_hit", "blks_read", "read_ms")
STATEMENTS = """
    SELECT regexp_replace(query, '\\s+', ' ', 'g'), sum(calls), sum(total_exec_time),
           sum(rows), sum(shared_blks_hit), sum(shared_blks_read),
           sum(coalesce((to_jsonb(s) ->> 'shared_blk_read_time')::float8,
                        (to_jsonb(s) ->> 'blk_read_time')::float8, 0))
    FROM pg_stat_statements s
    WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
    GROUP BY 1
"""


def track_statements(server: str, pgdata: Path | None) -> None:
    """pg_stat_statements loaded and tracking nested statements (the claim's parts, the
    triggers'), with read times: into the embedded server at `pgdata` by a restart when it is
    not loaded yet, else (DATABASE_URL's server) it must be."""
    with psycopg.connect(server, autocommit=True) as conn:
        [(loaded,)] = conn.execute("SHOW shared_preload_libraries").fetchall()
        if "pg_stat_statements" not in str(loaded):
            if pgdata is None:
                raise SystemExit("--statements: load pg_stat_statements into the server")
            conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            conn.execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")
            conn.execute("ALTER SYSTEM SET pg_stat_statements.max = 10000")
            conn.execute("ALTER SYSTEM SET track_io_timing = on")
            restart_embedded(pgdata)


def reset_statements(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute(
            "SELECT pg_stat_statements_reset(0, "
            "(SELECT oid FROM pg_database WHERE datname = current_database()), 0)"
        )


def add_statements(url: str, into: dict[str, list[float]]) -> None:
    """The database's statements since reset_statements(url), added to `into` (text: figures
    in STATEMENT_FIGURES' order)."""
    with psycopg.connect(url, autocommit=True) as conn:
        for text, *figures in conn.execute(STATEMENTS):
            sums = into.setdefault(str(text), [0.0] * len(STATEMENT_FIGURES))
            for i, value in enumerate(figures):
                sums[i] += float(value or 0)


def statements_said(
    empty: dict[str, list[float]], full: dict[str, list[float]], top: int, jobs: int
) -> str:
    """The `top` statements of most time in full, then of most shared blocks read there, each
    with its figures in both databases: calls, ms in all, blocks hit and read (and their read
    time, ms) per call; `jobs` the jobs the rounds drained and claimed in each database."""
    zero = [0.0] * len(STATEMENT_FIGURES)

    def line(text: str) -> str:
        said = []
        for name, sums in ((EMPTY, empty.get(text, zero)), (FULL, full.get(text, zero))):
            calls, ms, _, hit, read, read_ms = sums
            per = max(calls, 1)
            said.append(
                f"{name} {calls:,.0f} calls {ms:,.0f} ms ({1000 * ms / max(jobs, 1):.2f} "
                f"us/job) hit {hit / per:,.1f} read {read / per:,.2f} ({read_ms:,.0f} ms)"
            )
        return f"  - `{text[:160]}`: " + "; ".join(said)

    by_time = sorted(full, key=lambda t: -full[t][1])[:top]
    by_read = sorted(full, key=lambda t: -full[t][4])[:top]
    return "\n".join(
        [f"statements of the drains, wakes and claims, {jobs:,} jobs a database, by time in full:"]
        + [line(t) for t in by_time]
        + ["by shared blocks read in full:"]
        + [line(t) for t in by_read]
    )


# ---- the measurements ------------------------------------------------------------------------

NO_ACTIVE = "SELECT (NOT EXISTS (SELECT FROM pipeline.active_jobs))::int"


def enqueue_noop(conn: psycopg.Connection[Any], jobs: int) -> int:
    """`jobs` ready no-op jobs in one statement; returns the highest id taken before them."""
    [(before,)] = conn.execute("SELECT nextval('pipeline.active_jobs_id_seq')").fetchall()
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload) "
        "SELECT %s, jsonb_build_object('i', g) FROM generate_series(1, %s) AS g",
        (STAGE, jobs),
    )
    return int(before)


def stop(workers: Sequence[subprocess.Popen[bytes]]) -> None:
    for w in workers:
        if w.poll() is None:
            w.send_signal(signal.SIGTERM)
    for w in workers:
        try:
            w.wait(timeout=60)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()


def drain_and_wake(url: str, jobs: int, wake_samples: int, home: Path) -> dict[str, float]:
    """Drain `jobs` no-op jobs with fresh workers, then send them single jobs while idle."""
    figures: dict[str, float] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        marker = enqueue_noop(conn, jobs)
        [(launched,)] = conn.execute("SELECT clock_timestamp()").fetchall()
        poller = conn.execute("SELECT pg_backend_pid()").fetchall()[0][0]
        meter = Meter([], _postmaster(conn), frozenset({int(poller)}))
        before = meter.read()
        workers = start_workers(url, WORKERS, CONCURRENCY, home)
        meter.worker_pids = [w.pid for w in workers]
        try:
            wait_until(conn, NO_ACTIVE, 1, 600)
            # CPU from the workers' start to the last job: their start-up included.
            usage = Meter.usage(before, meter.read())
            figures["worker_cpu"] = 1000 * usage.worker_s / jobs
            figures["postgres_cpu"] = 1000 * usage.postgres_s / jobs
            figures["other_load"] = usage.other_busy_pct
            # From the first claim to the last completion, by the database's clock: as
            # benchmarks/drain.py, the workers' start-up is left out (measured on its own).
            [(span, startup)] = conn.execute(
                "SELECT extract(epoch FROM max(finished_at) - min(started_at)), "
                "extract(epoch FROM min(started_at) - %(at)s) FROM pipeline.job_history "
                "WHERE id > %(marker)s AND finished_at >= %(at)s",
                {"marker": marker, "at": launched},
            ).fetchall()
            figures["drain"] = jobs / float(span)
            figures["startup"] = float(startup) * 1000
            marker = enqueue_noop(conn, 0)
            for _ in range(wake_samples):
                conn.execute(
                    "INSERT INTO pipeline.active_jobs (type, payload) VALUES (%s, '{}')", (STAGE,)
                )
                wait_until(conn, NO_ACTIVE, 1, 30, every=0.002)
            waits = [
                float(row[0]) * 1000
                for row in conn.execute(
                    "SELECT extract(epoch FROM started_at - created_at) FROM pipeline.job_history "
                    "WHERE id > %(marker)s AND finished_at >= %(at)s",
                    {"marker": marker, "at": launched},
                )
            ]
            figures["wake_p50"] = statistics.median(waits)
            figures["wake_p99"] = percentile(waits, 0.99)
        finally:
            stop(workers)
    return figures


def claim_latency(url: str, jobs: int) -> dict[str, float]:
    """JobStore.claim of CLAIM_BATCH at a time over `jobs` ready jobs, each call timed; then
    the claimed jobs go (TRUNCATE: only the hot table)."""
    with psycopg.connect(url, autocommit=True) as conn:
        enqueue_noop(conn, jobs)
        conn.execute("ANALYZE pipeline.active_jobs")
    pool = make_pool(url, max_size=1, name="pg-pipeline scale benchmark")
    store, worker, calls = JobStore(pool), uuid.uuid4(), []
    try:
        while True:
            started = time.perf_counter()
            batch = store.claim([STAGE], CLAIM_BATCH, worker)
            calls.append((time.perf_counter() - started) * 1000)
            if not batch:
                break
    finally:
        pool.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("TRUNCATE pipeline.active_jobs")
    return {"claim_p50": statistics.median(calls), "claim_p99": percentile(calls, 0.99)}


def cli_env(url: str, home: Path) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": url, "PIPELINE_HOME": str(home)}


def status_times(url: str, home: Path, samples: int) -> dict[str, float]:
    """`pipeline status` as a subprocess (wall time, Python's start included), and the
    execution time of its per-stage statement, the one that reads the last day's jobs. The
    processes read bytecode, as an installed package's do: the first, untimed, writes it (under
    `home`, whatever PYTHONDONTWRITEBYTECODE says), else each would compile the package's
    modules from source, tens of ms."""
    exe = Path(sys.executable).parent / "pipeline"
    env = cli_env(url, home) | {"PYTHONPYCACHEPREFIX": str(home / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    walls, statement = [], []
    for i in range(samples + 1):
        started = time.perf_counter()
        subprocess.run(
            [str(exe), "status"], env=env, cwd=REPO, check=True, stdout=subprocess.DEVNULL
        )
        if i:
            walls.append((time.perf_counter() - started) * 1000)
    with psycopg.connect(url, autocommit=True) as conn:
        for name in ("monitoring_stages", "monitoring_failures_hourly"):
            for _ in range(samples):
                rows = conn.execute("EXPLAIN (ANALYZE) " + Q[name]).fetchall()
                statement.append((name, execution_ms([str(r[0]) for r in rows])))
    by_name = {
        name: statistics.median(ms for n, ms in statement if n == name)
        for name in ("monitoring_stages", "monitoring_failures_hourly")
    }
    return {
        "status_wall": statistics.median(walls),
        "status_stages_sql": by_name["monitoring_stages"],
        "status_failures_sql": by_name["monitoring_failures_hourly"],
    }


#: The dashboard's pages timed: the overview, and the jobs page newest first, filtered by
#: status and by stage (one that a fifth of the jobs have, and one that none has, as a retired
#: or misspelt stage: the whole history to look through), and deep in the history (`before`:
#: the id half way through the jobs).
PAGES = (
    ("overview", "/"),
    ("jobs_page", "/jobs"),
    ("jobs_failed", "/jobs?status=failed"),
    ("jobs_stage", "/jobs?stage=extract"),
    ("jobs_stage_none", "/jobs?stage=retired"),
    ("jobs_deep", "/jobs?before={middle}"),
)


def dashboard_times(url: str, samples: int) -> dict[str, float]:
    """The overview and jobs pages through the dashboard's ASGI app, in process; the first
    request of each is left out (the pool's connections, the templates)."""
    from starlette.testclient import TestClient

    from pg_pipeline.dashboard import app as dashboard_app

    with psycopg.connect(url, autocommit=True) as conn:
        [(middle,)] = conn.execute(
            "SELECT coalesce(max(id), 2) / 2 FROM pipeline.job_history"
        ).fetchall()
    figures: dict[str, float] = {}
    with TestClient(dashboard_app(url, token=""), base_url="http://127.0.0.1") as client:
        for name, page in PAGES:
            path = page.format(middle=middle)
            times = []
            for i in range(samples + 1):
                started = time.perf_counter()
                response = client.get(path)
                took = (time.perf_counter() - started) * 1000
                if response.status_code != 200:
                    raise RuntimeError(f"{path}: HTTP {response.status_code}")
                if i:
                    times.append(took)
            figures[name] = statistics.median(times)
    return figures


def measure(
    url: str, args: argparse.Namespace, home: Path, statements: dict[str, list[float]]
) -> dict[str, float]:
    """A round in one database; the hot path's statements (drain, wake, claim) added to
    `statements` when --statements asks for them."""
    if args.statements:
        reset_statements(url)
    figures = drain_and_wake(url, args.jobs, args.wake_samples, home)
    figures |= claim_latency(url, args.jobs)
    if args.statements:
        add_statements(url, statements)
    figures |= status_times(url, home, args.samples)
    figures |= dashboard_times(url, args.samples)
    return figures


def keep_fed(
    conn: psycopg.Connection[Any],
    jobs: int,
    until: Callable[[], bool],
    mark: Callable[[], None] | None = None,
) -> None:
    """Top the backlog up to `jobs` ready jobs whenever it falls below half, until `until()`:
    the workers never run dry while a window is measured. `mark()` every MARK_EVERY_S."""
    marked = time.perf_counter()
    while not until():
        [(ready,)] = conn.execute("SELECT count(*) FROM pipeline.active_jobs").fetchall()
        if ready < jobs // 2:
            enqueue_noop(conn, jobs - int(ready))
        if mark is not None and time.perf_counter() - marked >= MARK_EVERY_S:
            marked = time.perf_counter()
            mark()
        time.sleep(0.05)


def prune_command(exe: Path, older_than: str, rest: float | None) -> list[str]:
    """The prune's command line: `--rest` only when asked (None: the prune's own default, so
    that the benchmark follows it when it changes)."""
    command = [str(exe), "prune", "--older-than", older_than]
    if rest is not None:
        command += ["--rest", f"{rest:g}"]
    return command


#: The finished jobs of a fed drain by the mark they finished before (drain_windows.done_by_mark).
DONE_BY_MARK = """
    SELECT width_bucket(finished_at, %(clocks)s::timestamptz[]), count(*)
    FROM pipeline.job_history WHERE id > %(marker)s AND finished_at >= %(first)s GROUP BY 1
"""


#: The relations under VACUUM now, autovacuum's marked: a fed drain's marks record them.
VACUUMING = """
    SELECT p.relid::regclass::text
           || CASE WHEN a.backend_type = 'autovacuum worker' THEN ' (auto)' ELSE '' END
    FROM pg_stat_progress_vacuum p LEFT JOIN pg_stat_activity a USING (pid)
    ORDER BY 1
"""


def fed_drain(
    url: str,
    jobs: int,
    home: Path,
    prune: Sequence[str] | None,
    control_s: float = 0.0,
    before_s: float = PRUNE_BEFORE_S,
    worker_args: Sequence[str] = (),
) -> FedDrain:
    """Workers draining a backlog kept fed, marked every MARK_EVERY_S from their first claim:
    with `prune` (its command line), the command started once they have claimed for
    `before_s`, and the drain kept on after it exits for as long as it ran (5 s to
    PRUNE_AFTER_MAX_S); without, a control: the same drain for `control_s` seconds.
    `worker_args`: more flags for each `pipeline worker` (--worker-arg)."""
    at, load = datetime.now(UTC).strftime("%H:%M:%S"), loadavg()
    with psycopg.connect(url, autocommit=True) as conn:
        marker = enqueue_noop(conn, jobs)
        poller = conn.execute("SELECT pg_backend_pid()").fetchall()[0][0]
        meter = Meter([], _postmaster(conn), frozenset({int(poller)}))
        clocks: list[datetime] = []
        readings: list[Reading] = []
        vacuums: list[tuple[str, ...]] = []
        edges: list[int] = []

        def mark() -> None:
            readings.append(meter.read())
            clocks.append(conn.execute("SELECT clock_timestamp()").fetchall()[0][0])
            vacuums.append(tuple(str(r[0]) for r in conn.execute(VACUUMING).fetchall()))

        def edge() -> None:
            mark()
            edges.append(len(clocks) - 1)

        workers = start_workers(url, WORKERS, CONCURRENCY, home, list(worker_args))
        said, prune_s = f"no prune for {control_s:.0f} s", 0.0
        try:
            wait_until(
                conn, f"SELECT (count(*) < {int(jobs)})::int FROM pipeline.active_jobs", 1, 120
            )
            started = time.perf_counter()
            if prune is None:
                mark()
                keep_fed(conn, jobs, lambda: time.perf_counter() - started > control_s, mark)
                mark()
            else:
                edge()
                keep_fed(conn, jobs, lambda: time.perf_counter() - started > before_s, mark)
                edge()
                began = time.perf_counter()
                pruner = subprocess.Popen(
                    prune,
                    env=cli_env(url, home),
                    cwd=REPO,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                )
                keep_fed(conn, jobs, lambda: pruner.poll() is not None, mark)
                prune_s = time.perf_counter() - began
                edge()
                after = min(max(prune_s, 5.0), PRUNE_AFTER_MAX_S)
                keep_fed(conn, jobs, lambda: time.perf_counter() - began > prune_s + after, mark)
                edge()
                out = pruner.stdout.read() if pruner.stdout else b""
                said = f"exit {pruner.returncode}: {out.decode().strip()}"
            rows = conn.execute(
                DONE_BY_MARK, {"clocks": clocks, "marker": marker, "first": clocks[0]}
            ).fetchall()
        finally:
            stop(workers)
        conn.execute("TRUNCATE pipeline.active_jobs")
    offsets = [(c - clocks[0]).total_seconds() for c in clocks]
    done = done_by_mark({int(b): int(n) for b, n in rows}, len(clocks))
    return FedDrain(
        kind=CONTROL if prune is None else PRUNE,
        at=at,
        load=load,
        points=[Point(*p) for p in zip(offsets, done, readings, vacuums, strict=True)],
        edges=[offsets[i] for i in edges],
        prune_s=prune_s,
        said=said,
    )


def drain_beside_prune(
    url: str, jobs: int, older_than: str, home: Path, rest: float | None = None
) -> dict[str, float]:
    """Workers draining a backlog kept fed (fed_drain), `pipeline prune --older-than` started
    once they have claimed for PRUNE_BEFORE_S: the rate while the prune process runs (its
    start-up included) against the rates in the window before it and in one as long as the
    prune (5 s to PRUNE_AFTER_MAX_S) right after it, in the same drain (by the database's
    clock). `older_than` as the CLI takes it: 28d, 451234s; `rest` the prune's --rest (None:
    its default). With each rate, the other sessions' load in its window (% of all cores): the
    machine is shared, and a window with more of it drains slower for that alone."""
    exe = Path(sys.executable).parent / "pipeline"
    drain = fed_drain(url, jobs, home, prune_command(exe, older_than, rest))
    print(f"  prune ({drain.prune_s:.1f} s; load {loadavg()}): {drain.said}", flush=True)
    return beside_figures(drain)


def beside_figures(drain: FedDrain) -> dict[str, float]:
    """A prune run's windows as drain_beside_prune reports them."""
    got = windows(drain, drain.edges)
    return {
        "before_prune": got["before"].rate,
        "beside_prune": got["beside"].rate,
        "after_prune": got["after"].rate,
        "prune_s": drain.prune_s,
        "after_s": drain.edges[3] - drain.edges[2],
        **{f"other_{name}": w.other_pct for name, w in got.items()},
    }


def fresh_databases(server: str, urls: Iterable[str]) -> str:
    """Each database of `urls` dropped and made again, then migrated; the server's version."""
    with psycopg.connect(server, autocommit=True) as admin:
        [(version,)] = admin.execute("SHOW server_version").fetchall()
        for url in urls:
            name = sql.Identifier(str(conninfo_to_dict(url)["dbname"]))
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
            admin.execute(sql.SQL("CREATE DATABASE {}").format(name))
            with psycopg.connect(url, autocommit=True) as conn:
                migrate(conn)
    return str(version)


FIGURES = (
    ("drain (jobs/s)", "drain"),
    ("claim p50 (ms, 100 a call)", "claim_p50"),
    ("claim p99 (ms, 100 a call)", "claim_p99"),
    ("wake p50 (ms)", "wake_p50"),
    ("wake p99 (ms)", "wake_p99"),
    ("worker start-up to first claim (ms)", "startup"),
    ("worker CPU a drained job (ms, start-up included)", "worker_cpu"),
    ("Postgres CPU a drained job (ms)", "postgres_cpu"),
    ("other load during the drain (% of all cores)", "other_load"),
    ("`pipeline status` wall (ms, process included)", "status_wall"),
    ("status per-stage statement (ms, EXPLAIN ANALYZE)", "status_stages_sql"),
    ("status failures-hourly statement (ms, EXPLAIN ANALYZE)", "status_failures_sql"),
    ("dashboard overview `/` (ms)", "overview"),
    ("dashboard jobs `/jobs` (ms)", "jobs_page"),
    ("dashboard jobs `/jobs?status=failed` (ms)", "jobs_failed"),
    ("dashboard jobs `/jobs?stage=extract` (ms)", "jobs_stage"),
    ("dashboard jobs `/jobs?stage=retired`, no such job (ms)", "jobs_stage_none"),
    ("dashboard jobs `/jobs?before=` half way (ms)", "jobs_deep"),
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scale")
    p.add_argument("--finished", type=int, default=100_000, help="jobs in the older days")
    p.add_argument("--days", type=int, default=30, help="older days they are spread over")
    p.add_argument("--day-volume", type=int, default=1_000_000, help="jobs in the last 24 h")
    p.add_argument("--indexes", choices=("after", "before"), default="after")
    p.add_argument("--jobs", type=int, default=20_000, help="per drain and claim round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--wake-samples", type=int, default=200)
    p.add_argument("--samples", type=int, default=5, help="per status and page figure")
    p.add_argument(
        "--prune-days", type=int, default=3, help="oldest days the prune drops (0: no prune)"
    )
    p.add_argument(
        "--prune-rest",
        type=rest_arg,
        default=None,
        metavar="TIMES",
        help="the prune's --rest, its rest after each batch in multiples of the batch's time "
        "(0: full speed; default: the prune's own)",
    )
    p.add_argument(
        "--control-s",
        type=float,
        default=0.0,
        metavar="S",
        help="instead of the prune, a control: the same drain for S seconds with no prune",
    )
    p.add_argument(
        "--worker-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="a flag for the workers of the prune's or the control's drain, e.g. "
        "--worker-arg=--hot-vacuum-dead-rows=off (repeatable)",
    )
    p.add_argument(
        "--runs-file",
        type=Path,
        help="append the prune's or the control's drain to FILE (JSON lines) and report the "
        "pairs in it: prune and control runs alternated",
    )
    p.add_argument("--pgdata", type=Path, help="the embedded server's data directory (new)")
    p.add_argument("--keep", action="store_true", help="leave the server's data behind")
    p.add_argument("--load-only", action="store_true")
    p.add_argument(
        "--reuse", type=Path, help="a data directory kept with --pgdata DIR --keep: no load"
    )
    p.add_argument(
        "--no-settle",
        dest="settle",
        action="store_false",
        help="start each round as the load or the round before left the server",
    )
    p.add_argument(
        "--statements", type=int, default=0, help="print the hot path's N costliest statements"
    )
    return p


def load_said(load: Load) -> str:
    return (
        f"load: {load.rows:,} rows in {load.seconds:.1f} s "
        f"({load.rows / max(load.seconds, 1e-9):,.0f} rows/s), indexes {load.index_seconds:.1f} s, "
        f"VACUUM ANALYZE {load.vacuum_seconds:.1f} s; history "
        f"{load.history_bytes / 1e9:.2f} GB in {load.partitions} partitions "
        f"({load.history_bytes / max(load.partitions, 1) / 1e6:,.0f} MB each on average, "
        f"{load.history_bytes / max(load.rows, 1):.0f} bytes a job); database "
        f"{load.database_bytes / 1e9:.2f} GB"
    )


def as_loaded(args: argparse.Namespace) -> dict[str, Any] | None:
    """With --reuse, the load's record, and `args`' --finished, --days and --day-volume set to
    the load's: the prune's cutoff and the report go by the history as it was loaded (a cutoff
    taken from the default 30 days dropped 70 of 99 loaded days). None without --reuse."""
    if not args.reuse:
        return None
    kept: dict[str, Any] = json.loads((args.reuse / LOAD_FILE).read_text())
    args.finished, args.days, args.day_volume = kept["finished"], kept["days"], kept["volume"]
    return kept


def run(server: str, args: argparse.Namespace, home: Path, pgdata: Path | None = None) -> str:
    """The whole benchmark on `server` (two databases of its own, made afresh, or with --reuse
    the `full` one as a run with --keep left it): progress on stdout, and the report, in
    markdown, returned. `args` as parser() makes them; `pgdata` the embedded server's (None:
    another server, which must have pg_stat_statements loaded for --statements)."""
    import benchmarks.bench_app  # noqa: F401  registers bench_noop

    kept = as_loaded(args)
    pruning = args.prune_days and not args.control_s
    older_than = prune_older_than_days(args.days, 2, args.prune_days) if pruning else 0
    urls = {
        EMPTY: make_conninfo(server, dbname="bench_scale_empty"),
        FULL: make_conninfo(server, dbname="bench_scale_full"),
    }
    if args.statements:
        track_statements(server, pgdata)
    if kept is not None:
        version = fresh_databases(server, [urls[EMPTY]])
        load = Load(**kept["load"])
        with psycopg.connect(urls[FULL], autocommit=True) as conn:
            migrate(conn)
            # A run stopped midway leaves jobs behind; the history's rows stay.
            conn.execute("TRUNCATE pipeline.active_jobs")
            [(rows,)] = conn.execute(
                "SELECT count(*) FROM pipeline.job_history "
                "WHERE finished_at > now() - interval '1 day'"
            ).fetchall()
        print(
            f"PostgreSQL {version}; reusing {args.reuse} ({load_said(load)}); "
            f"{rows:,} jobs finished in the last 24 h now",
            flush=True,
        )
    else:
        version = fresh_databases(server, urls.values())
        print(
            f"PostgreSQL {version}; loading {args.finished:,} jobs over {args.days} days + "
            f"{args.day_volume:,} in the last 24 h, indexes {args.indexes} the rows",
            flush=True,
        )
        load = load_history(
            urls[FULL],
            args.finished,
            args.days,
            args.day_volume,
            indexes_after=args.indexes == "after",
        )
        print(load_said(load), flush=True)
        if pgdata is not None and args.keep:
            record = {"load": load.__dict__, "finished": args.finished, "days": args.days}
            (pgdata / LOAD_FILE).write_text(json.dumps(record | {"volume": args.day_volume}))
    if args.load_only:
        return load_said(load)
    rounds: dict[str, list[dict[str, float]]] = {EMPTY: [], FULL: []}
    statements: dict[str, dict[str, list[float]]] = {EMPTY: {}, FULL: {}}
    settles = []
    for i in range(args.rounds):
        for name in (EMPTY, FULL) if i % 2 == 0 else (FULL, EMPTY):
            settled = "unsettled"
            if args.settle:
                done = settle(server)
                settles.append(done.seconds)
                settled = settled_said(done)
            figures = measure(urls[name], args, home, statements[name])
            shown = ", ".join(f"{k} {v:,.2f}" for k, v in sorted(figures.items()))
            print(f"  round {i + 1} {name} ({settled}; load {loadavg()}): {shown}", flush=True)
            rounds[name].append(figures)
    medians = {name: median_by_figure(r) for name, r in rounds.items()}
    pruned = "(no prune: --prune-days 0)"
    if args.prune_days or args.control_s:
        if args.settle:
            # Prune and control runs start alike: the run before's autovacuum and dirty
            # buffers left behind, not in the drain.
            print(f"  before the drain: {settled_said(settle(server))}", flush=True)
        pruned = beside_said(urls[FULL], args, home, older_than)
    settling = (
        f"each round settled first (CHECKPOINT, no autovacuum): {min(settles):.1f}-"
        f"{max(settles):.1f} s"
        if settles
        else "rounds unsettled (--no-settle)"
        if args.rounds
        else "no rounds"
    )
    said = [
        f"{load.rows:,} finished jobs in the history ({args.day_volume:,} of them in the "
        f"last 24 h), PostgreSQL {version}; medians of {args.rounds} rounds, {WORKERS} "
        f"workers x {CONCURRENCY}, {args.jobs:,} no-op jobs a drain; {settling}",
    ]
    if args.rounds:
        rows = [(label, medians[EMPTY][key], medians[FULL][key]) for label, key in FIGURES]
        said += ["", markdown_table(rows)]
    said += ["", pruned, "", load_said(load)]
    if args.statements:
        jobs = args.rounds * (2 * args.jobs + args.wake_samples)
        said += ["", statements_said(statements[EMPTY], statements[FULL], args.statements, jobs)]
    return "\n".join(said)


def beside_said(url: str, args: argparse.Namespace, home: Path, older_than: int) -> str:
    """The drain beside the prune (--prune-days) or the control's (--control-s), said; with
    --runs-file, the drain appended there and the pairs in it reported."""
    flags = args.worker_arg
    if args.control_s:
        drain = fed_drain(url, args.jobs, home, None, args.control_s, worker_args=flags)
        said = f"control: the same drain, no prune, {args.control_s:.0f} s"
    else:
        exe = Path(sys.executable).parent / "pipeline"
        command = prune_command(exe, f"{older_than}d", args.prune_rest)
        drain = fed_drain(url, args.jobs, home, command, worker_args=flags)
        print(f"  prune ({drain.prune_s:.1f} s; load {loadavg()}): {drain.said}", flush=True)
        beside = beside_figures(drain)
        rest = "" if args.prune_rest is None else f" --rest {args.prune_rest:g}"
        said = (
            f"drain beside `pipeline prune --older-than {older_than}d{rest}` (drops the oldest "
            f"{args.prune_days} days), with the history: {beside['beside_prune']:,.0f} jobs/s "
            f"while the prune ran ({beside['prune_s']:.1f} s, its process start included), "
            f"{beside['before_prune']:,.0f} jobs/s in the {PRUNE_BEFORE_S:.0f} s before it and "
            f"{beside['after_prune']:,.0f} jobs/s in the {beside['after_s']:.0f} s right after it "
            f"in the same drain: {ratio(beside['before_prune'], beside['beside_prune']):.2f}x "
            f"of before, {ratio(beside['after_prune'], beside['beside_prune']):.2f}x of after; "
            f"other load (% of all cores) {beside['other_before']:.0f} before, "
            f"{beside['other_beside']:.0f} beside, {beside['other_after']:.0f} after"
        )
    if flags:
        said += f" (workers: {' '.join(flags)})"
    spans = ", ".join(
        f"{start:.0f} s {rate:,.0f} ({other:.0f} %{''.join(f'; {v}' for v in vacuums)})"
        for start, rate, other, vacuums in rate_by_span(drain, 30)
    )
    said += (
        "\n\nthe drain's rate by 30 s from its start, jobs/s (other load; relations seen under "
        f"VACUUM): {spans}"
    )
    if len(drain.points) >= 2:
        first, last = drain.points[0], drain.points[-1]
        jobs = last.done - first.done
        usage = Meter.usage(first.reading, last.reading)
        # Autovacuum's and the workers' own VACUUMs are the postmaster's children too: counted.
        said += (
            f"\n\nthe whole drain: {jobs:,} jobs in {last.offset - first.offset:.0f} s, "
            f"{jobs / max(last.offset - first.offset, 1e-9):,.0f} jobs/s, Postgres CPU "
            f"{1e6 * usage.postgres_s / max(jobs, 1):.0f} us a job, other load "
            f"{usage.other_busy_pct:.0f} %"
        )
    if args.runs_file:
        append_run(args.runs_file, drain)
        runs = read_runs(args.runs_file)
        complete = runs[: len(runs) - len(runs) % 2]
        said += f"\n\n{len(runs)} runs in {args.runs_file}"
        if complete:
            try:
                said += ":\n\n" + pairs_said(complete)
            except ValueError as error:
                said += f": not prune and control alternated ({error})"
    return said


def loadavg() -> str:
    """The machine's 1-minute load average: other sessions share it."""
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> None:
    args = parser().parse_args()
    # A TERM (a timeout) ends the run through its `finally`: workers and the server stop.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    scratch = Path(tempfile.mkdtemp(prefix="pgscale-"))
    external = os.environ.get("DATABASE_URL")
    if args.reuse:
        if external or args.pgdata:
            raise SystemExit("--reuse DIR is the embedded server's data directory alone")
        if not (args.reuse / LOAD_FILE).exists():
            raise SystemExit(f"{args.reuse} holds no {LOAD_FILE}: load with --pgdata DIR --keep")
        pgdata, keep = args.reuse, True
    else:
        pgdata, keep = args.pgdata or scratch / "pgdata", args.keep
        if args.pgdata and args.pgdata.exists():
            raise SystemExit(f"{args.pgdata} exists: the benchmark makes its own server there")
    try:
        report = run(
            external or embedded_url(pgdata), args, scratch / "home", None if external else pgdata
        )
    finally:
        if not external:
            stop_embedded(pgdata)
        if not keep:
            shutil.rmtree(pgdata, ignore_errors=True)
        if not pgdata.is_relative_to(scratch) or not keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print()
    print(report)


if __name__ == "__main__":
    main()
