"""pg-pipeline: workers are real `pipeline worker` processes; enqueue runs in this process."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

import benchmarks.bench_app
import benchmarks.compare.pgpipeline_app  # noqa: F401  registers bench_wake
from benchmarks.compare.sides import Side, WorkerConfig
from benchmarks.drain import start_workers
from pg_pipeline import JobRequest, enqueue, enqueue_many
from pg_pipeline.migrate import migrate

APPS = "benchmarks.bench_app,benchmarks.compare.pgpipeline_app"


class PgPipelineSide(Side):
    def __init__(self, scratch: Path, drain_jobs: int) -> None:
        super().__init__(
            name="pg-pipeline",
            prefix="pgp",
            # Both terms are partial-index scans: finished rows are never counted. Queued jobs
            # sit in two partial indexes (with a tenant or without); the OR lets the planner
            # read both, where `status = 'queued'` alone scanned the whole table on every poll
            # (50 ms and three processes with a million finished rows, which the flatness
            # figure then charged to the workers).
            remaining_sql=(
                "SELECT (SELECT count(*) FROM pipeline.jobs WHERE status = 'queued'"
                " AND (tenant_id IS NULL OR tenant_id IS NOT NULL))"
                " + (SELECT count(*) FROM pipeline.jobs WHERE status = 'running')"
            ),
            succeeded_sql="SELECT count(*) FROM pipeline.jobs WHERE status = 'done'",
            drain_jobs=drain_jobs,
            scratch=scratch,
            notes=[
                "pg-pipeline: `pipeline worker` processes (threads, psycopg 3), stage "
                "`bench_noop`; defaults are one worker with no flags (concurrency 8).",
            ],
        )

    def install(self, url: str) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)

    def configs(self, quick: bool) -> list[WorkerConfig]:
        defaults = WorkerConfig("1 proc, no flags (c=8)", 1, default=True)

        def swept(procs: int, c: int) -> WorkerConfig:
            return WorkerConfig(f"{procs} proc, c={c}", procs, ("--concurrency", str(c)))

        if quick:
            return [defaults, swept(2, 32)]
        sweep = [swept(p, c) for p in (1, 2) for c in (8, 16, 32, 64) if (p, c) != (1, 8)]
        return [defaults, *sweep]

    def start_workers(
        self, url: str, config: WorkerConfig, latency_file: Path | None = None
    ) -> list[subprocess.Popen[bytes]]:
        env = {"PIPELINE_APP": APPS}
        if latency_file is not None:
            env["BENCH_LATENCY_FILE"] = str(latency_file)
        log = (self.scratch / "pgp-worker.log").open("ab")
        procs = start_workers(
            url,
            config.processes,
            None,
            self.scratch / "home",
            list(config.args),
            env=env,
            output=log,
        )
        log.close()
        return procs

    def enqueue_drain(self, url: str, n: int, on_commit: Callable[[], None]) -> float:
        requests = [JobRequest("bench_noop", {"i": i}) for i in range(n)]
        with psycopg.connect(url, autocommit=True) as conn:
            enqueue_many(conn, requests)
            committed = time.time()
            on_commit()
        return committed

    def enqueue_single(self, url: str, n: int) -> float:
        with psycopg.connect(url, autocommit=True) as conn:
            start = time.perf_counter()
            for i in range(n):
                enqueue(conn, "bench_noop", {"i": i})
            return time.perf_counter() - start

    def enqueue_bulk(self, url: str, n: int, per_call: int) -> float:
        with psycopg.connect(url, autocommit=True) as conn:
            start = time.perf_counter()
            for first in range(0, n, per_call):
                batch = range(first, min(n, first + per_call))
                enqueue_many(conn, [JobRequest("bench_noop", {"i": i}) for i in batch])
            return time.perf_counter() - start

    def send_wake(self, url: str, samples: int, interval: float) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            start = time.monotonic()
            for i in range(samples):
                delay = start + i * interval - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                enqueue(conn, "bench_wake", {"t": time.time()})

    def fill_finished(self, url: str, n: int) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            fill(conn, n)


def fill(conn: psycopg.Connection[Any], n: int) -> None:
    """`n` done no-op jobs, as months of traffic leave them, then VACUUM ANALYZE."""
    conn.execute(
        "INSERT INTO pipeline.jobs (type, payload, status, attempts, claims, started_at, "
        "finished_at)"
        " SELECT 'bench_noop', jsonb_build_object('i', g), 'done', 1, 1, now(), now()"
        " FROM generate_series(1, %s) AS g",
        (n,),
    )
    conn.execute("VACUUM ANALYZE pipeline.jobs")
