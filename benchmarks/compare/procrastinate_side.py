"""Procrastinate 3.x: workers are `procrastinate worker` processes (psycopg 3, asyncio)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg

from benchmarks.compare.sides import ChildSide, WorkerConfig


class ProcrastinateSide(ChildSide):
    module = "benchmarks.compare.procrastinate_child"

    def __init__(self, python: Path, scratch: Path, drain_jobs: int) -> None:
        super().__init__(
            name="Procrastinate",
            prefix="pcr",
            remaining_sql=(
                "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"
            ),
            succeeded_sql="SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'",
            drain_jobs=drain_jobs,
            scratch=scratch,
            notes=[
                "Procrastinate: `procrastinate worker` processes, async no-op tasks; defaults "
                "are concurrency 1 and the connector's pool defaults; tuned configs raise "
                "`--concurrency` and size the pool to concurrency + 2 (the listener and the "
                "heartbeat). It fetches one job per query by design. Jobs are kept "
                "(delete_jobs=never, its default).",
            ],
        )
        self.python = python

    def configs(self, quick: bool) -> list[WorkerConfig]:
        defaults = WorkerConfig("1 proc, defaults (c=1)", 1, default=True)

        def tuned(procs: int, c: int) -> WorkerConfig:
            env = (("BENCH_POOL", str(c + 2)),)
            return WorkerConfig(f"{procs} proc, c={c}", procs, ("--concurrency", str(c)), env)

        if quick:
            return [defaults, tuned(2, 16)]
        return [defaults, *(tuned(p, c) for p in (1, 2) for c in (8, 32))]

    def start_workers(
        self, url: str, config: WorkerConfig, latency_file: Path | None = None
    ) -> list[subprocess.Popen[bytes]]:
        exe = self.python.parent / "procrastinate"
        app = "benchmarks.compare.procrastinate_app.app"
        argv = [str(exe), "--app", app, "--log-level", "warning", "worker", *config.args]
        return self.spawn(argv, url, config, latency_file)

    def fill_finished(self, url: str, n: int) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO procrastinate_jobs (queue_name, task_name, args, status, attempts) "
                "SELECT 'default', 'noop', '{}', 'succeeded', 1 FROM generate_series(1, %s)",
                (n,),
            )
            conn.execute("VACUUM ANALYZE procrastinate_jobs")
