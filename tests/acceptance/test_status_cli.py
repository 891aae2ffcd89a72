"""`pipeline status` and `pipeline status --json` as an operator and a script run them."""

from __future__ import annotations

import json
import signal
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from tests.acceptance.cli import WorkerProcess, run_cli
from tests.support.history import make_past_days
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]


@pytest.fixture(autouse=True)
def history_days(db_url: str) -> None:
    """The history's days that this module's finished jobs are dated in."""
    with psycopg.connect(db_url, autocommit=True) as c:
        make_past_days(c, 1)


W1 = uuid.UUID(int=1)


def seed(conn: Conn) -> None:
    """Known rows of every kind that `status` reports."""
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, tenant_id, payload, run_after)
           SELECT 'ocr', 'acme', '{}', now() - interval '3 minutes' FROM generate_series(1, 4)"""
    )
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, payload, status, attempts, leased_until,
            worker_id,
            started_at)
           VALUES ('ocr', '{}', 'running', 1, now() - interval '2 minutes', %s, now())""",
        (W1,),
    )
    conn.execute(
        """INSERT INTO pipeline.job_history (type, payload, status, attempts, started_at,
            finished_at)
           SELECT 'extract', '{}', 'done', 1 + g % 2, now() - interval '10 minutes' - g * interval
                  '1 second', now() - interval '10 minutes'
           FROM generate_series(1, 10) AS g"""
    )
    conn.execute(
        """INSERT INTO pipeline.job_history (type, payload, status, attempts, finished_at,
            last_error)
           VALUES ('extract', '{}', 'failed', 5, now() - interval '3 hours', 'boom')"""
    )
    conn.execute(
        """INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency)
           VALUES (%s, 'box-1', 4242, '{ocr,extract}', 6)""",
        (W1,),
    )
    conn.execute(
        "INSERT INTO pipeline.tenant_caps (tenant_id, stage, cap) VALUES ('acme', 'ocr', 2), "
        "('globex', 'ocr', 50)"
    )
    conn.execute(
        """INSERT INTO pipeline.tenant_slots (tenant_id, stage, running) VALUES ('acme', 'ocr', 2)
           ON CONFLICT (tenant_id, stage) DO UPDATE SET running = excluded.running"""
    )
    conn.execute(
        """INSERT INTO pipeline.schedules (name, stage, every_s, source, next_fire_at)
           VALUES ('nightly-report', 'extract', 86400, 'cli', now() + interval '2 hours')"""
    )


def test_status_prints_stages_then_tenants_at_their_cap_workers_and_schedules(
    env: dict[str, str], conn: Conn
) -> None:
    seed(conn)
    started = time.monotonic()
    result = run_cli(env, "status")
    took_min = (time.monotonic() - started) / 60
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["stage", "queued", "ready", "running"]
    rows = {line.split()[0]: line.split() for line in lines[1:3]}
    # stage queued ready running expired oldest-ready(2 words) failed1h failed24h done1h ...
    assert rows["ocr"][:5] == ["ocr", "4", "4", "1", "1"]
    # Seeded 3 minutes old; the command's start-up adds its own seconds on a loaded machine.
    assert rows["ocr"][6] == "min"
    assert 3.0 <= float(rows["ocr"][5]) <= round(3.0 + took_min, 1) + 0.1
    assert rows["extract"][:5] == ["extract", "0", "0", "0", "0"]
    assert rows["extract"][6:10] == ["0", "1", "10", "1.50/2"]
    text = result.stdout
    assert "running with an expired lease: 1" in text
    assert "failed per hour, last 24 h" in text
    tenant_lines = [line.split() for line in lines if line.strip().startswith(("acme", "globex"))]
    assert tenant_lines == [["acme", "ocr", "2", "2", "4"]]  # globex is far from its cap
    assert "workers: 1 live" in text
    assert any(line.split()[:3] == ["00000000", "box-1", "4242"] for line in lines)
    assert "schedules: 1" in text
    assert any(
        line.split()[:2] == ["nightly-report", "extract"] and "in 2.0 h" in line for line in lines
    )


def test_status_json_is_one_object_with_stable_keys(env: dict[str, str], conn: Conn) -> None:
    seed(conn)
    result = run_cli(env, "status", "--json")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["version"] == 1
    stages = {s["stage"]: s for s in status["stages"]}
    assert {k: stages["ocr"][k] for k in ("queued", "ready", "running", "expired_leases")} == {
        "queued": 4,
        "ready": 4,
        "running": 1,
        "expired_leases": 1,
    }
    extract = stages["extract"]
    assert (extract["completed_1h"], extract["failed_24h"], extract["max_attempts_1h"]) == (
        10,
        1,
        2,
    )
    assert extract["avg_attempts_1h"] == 1.5
    assert 1 <= extract["p50_s"] <= 10 and extract["p95_s"] >= extract["p50_s"]
    assert status["expired_leases"]["total"] == 1
    assert status["expired_leases"]["oldest"][0]["worker_id"] == str(W1)
    assert [
        (t["tenant_id"], t["running"], t["cap"], t["near_cap"]) for t in status["tenants"]["rows"]
    ] == [("acme", 2, 2, True), ("globex", 0, 50, False)]
    [worker] = status["workers"]
    assert (worker["id"], worker["stages"], worker["concurrency"], worker["in_flight"]) == (
        str(W1),
        ["ocr", "extract"],
        6,
        1,
    )
    assert status["schedules"]["rows"][0]["name"] == "nightly-report"
    assert [h["stage"] for h in status["failures_hourly"]] == ["extract"]


def test_status_of_an_empty_queue_says_so(env: dict[str, str], conn: Conn) -> None:
    result = run_cli(env, "status")
    assert result.returncode == 0, result.stderr
    assert "no jobs queued, running, or finished in the last 24 h" in result.stdout
    assert "workers: 0 live" in result.stdout
    shaped = json.loads(run_cli(env, "status", "--json").stdout)
    assert (shaped["stages"], shaped["workers"], shaped["schedules"]["total"]) == ([], [], 0)


def test_status_sees_a_real_worker_and_the_job_it_ran(
    env: dict[str, str], conn: Conn, start_worker: Callable[..., WorkerProcess]
) -> None:
    job_id = int(run_cli(env, "enqueue", "effect", '{"n": 1}').stdout)
    worker = start_worker("--stage", "effect", "--concurrency", "3")
    wait_for(
        lambda: (
            conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone()
            == ("done",)
        ),
        what="the job to run",
    )
    status = json.loads(run_cli(env, "status", "--json").stdout)
    [effect] = [s for s in status["stages"] if s["stage"] == "effect"]
    assert (effect["completed_1h"], effect["max_attempts_1h"], effect["queued"]) == (1, 1, 0)
    [live] = status["workers"]
    assert (live["pid"], live["stages"], live["concurrency"]) == (worker.pid, ["effect"], 3)
    assert "workers: 1 live" in run_cli(env, "status").stdout
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0
