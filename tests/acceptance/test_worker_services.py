"""A real `pipeline worker` runs its services: recurring schedules fire, metrics are served."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Callable
from typing import Any

import psycopg

from tests.acceptance.cli import WorkerProcess, run_cli
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
StartWorker = Callable[..., WorkerProcess]


def count(conn: Conn, sql: str) -> int:
    row = conn.execute(sql).fetchone()  # type: ignore[arg-type]
    return int(row[0]) if row else 0


def test_a_schedule_added_by_cli_fires_in_a_running_worker_once_per_fire_time(
    env: dict[str, str], conn: Conn, start_worker: StartWorker
) -> None:
    added = run_cli(env, "schedule", "add", "tick", "--stage", "effect", "--every", "1")
    assert added.returncode == 0, added.stderr
    # Two workers tick at once: each fire time still makes one job.
    start_worker("--stage", "effect")
    start_worker("--stage", "effect")
    wait_for(
        lambda: (
            count(conn, "SELECT count(*) FROM jobs WHERE type = 'effect' AND status = 'done'") >= 3
        ),
        timeout=60,
        what="three scheduled runs",
    )
    fire_keys = conn.execute("SELECT dedup_key FROM jobs WHERE type = 'effect'").fetchall()
    assert len(fire_keys) == len(set(fire_keys))
    assert all(str(k[0]).startswith("schedule:tick@") for k in fire_keys)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_worker_serves_prometheus_metrics_with_its_own_counters(
    env: dict[str, str], conn: Conn, start_worker: StartWorker
) -> None:
    port = free_port()
    start_worker("--stage", "effect", "--metrics-port", str(port))
    done = run_cli(env, "enqueue", "effect", '{"n": 1}')
    assert done.returncode == 0, done.stderr
    wait_for(
        lambda: count(conn, "SELECT count(*) FROM jobs WHERE status = 'done'") == 1,
        what="the job",
    )

    def scrape() -> str:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                return str(r.read().decode())
        except OSError:
            return ""

    def completed() -> str:
        text = scrape()
        return text if "pipeline_worker_jobs_settled_total{" in text and "effect" in text else ""

    text = wait_for(completed, timeout=30, what="the worker's counters in /metrics")
    assert "pipeline_jobs_queued" in text or "pipeline_queue_metrics_up" in text
