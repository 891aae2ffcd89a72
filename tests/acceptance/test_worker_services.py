"""A real `pipeline worker` runs its services: recurring schedules fire, metrics are served."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

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
            count(
                conn, "SELECT count(*) FROM pipeline.jobs WHERE type = 'effect' AND status = 'done'"
            )
            >= 3
        ),
        timeout=60,
        what="three scheduled runs",
    )
    fire_keys = conn.execute("SELECT dedup_key FROM pipeline.jobs WHERE type = 'effect'").fetchall()
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
        lambda: count(conn, "SELECT count(*) FROM pipeline.jobs WHERE status = 'done'") == 1,
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


def outward_address() -> str:
    """This machine's address on its network (not loopback): where another machine reaches it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("203.0.113.1", 9))  # a documentation address: no packet is sent
        except OSError:
            pytest.skip("this machine has no route off loopback")
        address = str(s.getsockname()[0])
    if address.startswith("127."):
        pytest.skip("this machine has no address off loopback")
    return address


def answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=5):
            return True
    except OSError:
        return False


def test_the_metrics_endpoint_is_served_on_loopback_alone_unless_a_host_is_given(
    env: dict[str, str], start_worker: StartWorker
) -> None:
    outward = outward_address()
    local, anywhere = free_port(), free_port()
    start_worker("--stage", "effect", "--metrics-port", str(local))
    start_worker("--stage", "effect", "--metrics-port", str(anywhere), "--metrics-host", "0.0.0.0")
    wait_for(lambda: answers(outward, anywhere), timeout=60, what="the 0.0.0.0 endpoint")
    wait_for(lambda: answers("127.0.0.1", local), timeout=60, what="the loopback endpoint")

    assert not answers(outward, local)  # another machine cannot scrape it
    assert answers("127.0.0.1", anywhere)
