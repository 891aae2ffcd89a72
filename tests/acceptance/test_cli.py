"""The `pipeline` command as a user types it."""

from __future__ import annotations

import json
import signal
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from tests.acceptance.cli import REPO, WorkerProcess, cli_env, run_cli
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]


def test_enqueue_run_inspect_cancel_and_retry(
    env: dict[str, str], conn: Conn, start_worker: Callable[..., WorkerProcess]
) -> None:
    enqueued = run_cli(env, "enqueue", "effect", '{"n": 5}', "--tenant", "7", "--priority", "3")
    assert enqueued.returncode == 0, enqueued.stderr
    job_id = int(enqueued.stdout)

    worker = start_worker("--stage", "effect", "--concurrency", "2")
    wait_for(
        lambda: (
            conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone()
            == ("done",)
        ),
        what="the job to run",
    )
    shown = json.loads(run_cli(env, "jobs", "show", str(job_id)).stdout)
    assert (shown["status"], shown["tenant_id"], shown["priority"], shown["payload"]) == (
        "done",
        "7",
        3,
        {"n": 5},
    )
    status = run_cli(env, "status")
    assert status.returncode == 0
    # stage, queued, ready, running, expired, oldest ready, failed 1h, failed 24h, done 1h
    row = next(line.split() for line in status.stdout.splitlines() if line.startswith("effect"))
    assert row[:9] == ["effect", "0", "0", "0", "0", "-", "0", "0", "1"]
    assert "workers: 1 live" in status.stdout
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0

    later = int(run_cli(env, "enqueue", "effect", "{}", "--delay", "3600").stdout)
    cancelled = run_cli(env, "jobs", "cancel", str(later), "--reason", "not needed")
    assert cancelled.returncode == 0, cancelled.stderr
    assert run_cli(env, "jobs", "cancel", str(later)).returncode == 1
    listed = run_cli(env, "jobs", "list", "--status", "cancelled").stdout
    assert str(later) in listed and "not needed" in listed
    assert run_cli(env, "jobs", "retry", str(later)).returncode == 0
    row = conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (later,)).fetchone()
    assert row == ("queued",)
    assert run_cli(env, "jobs", "show", "999999").returncode == 1


def test_an_installation_in_the_schema_pipeline_schema_names_runs_apart_from_the_default(
    env: dict[str, str], conn: Conn, start_worker: Callable[..., WorkerProcess]
) -> None:
    other = {**env, "PIPELINE_SCHEMA": "queue_b"}
    migrated = run_cli(other, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    enqueued = run_cli(other, "enqueue", "effect", '{"n": 1}')
    assert enqueued.returncode == 0, enqueued.stderr
    job_id = int(enqueued.stdout)

    worker = start_worker("--stage", "effect", environ=other)
    wait_for(
        lambda: (
            conn.execute("SELECT status FROM queue_b.jobs WHERE id = %s", (job_id,)).fetchone()
            == ("done",)
        ),
        what="the job to run in queue_b",
    )
    status = run_cli(other, "status").stdout
    row = next(line.split() for line in status.splitlines() if line.startswith("effect"))
    assert row[:9] == ["effect", "0", "0", "0", "0", "-", "0", "0", "1"]
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0
    # The default installation saw none of it.
    assert conn.execute("SELECT count(*) FROM pipeline.jobs").fetchone() == (0,)
    assert "effect" not in run_cli(env, "status").stdout


def test_bad_payloads_exit_2_with_the_reason_and_insert_nothing(
    env: dict[str, str], conn: Conn
) -> None:
    bad_json = run_cli(env, "enqueue", "nap", "{seconds: 1}")
    invalid = run_cli(env, "enqueue", "nap", '{"seconds": "soon"}')
    unknown = run_cli(env, "enqueue", "resize", "{}")
    assert [r.returncode for r in (bad_json, invalid, unknown)] == [2, 2, 2]
    assert "not valid JSON" in bad_json.stderr
    assert "seconds" in invalid.stderr and "valid number" in invalid.stderr
    assert "unknown stage 'resize'" in unknown.stderr
    assert conn.execute("SELECT count(*) FROM pipeline.jobs").fetchone() == (0,)


def test_unreachable_database_is_one_line_naming_the_host_not_the_password(tmp_path: Path) -> None:
    env = cli_env("postgresql://app:s3cret@127.0.0.1:1/shop", tmp_path)
    for args in (["status"], ["enqueue", "noop", "{}"], ["worker"], ["migrate"]):
        result = run_cli(env, *args)
        assert result.returncode == 1, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert "127.0.0.1:1/shop" in lines[0] and "s3cret" not in lines[0]


def test_worker_with_an_app_that_fails_to_import_exits_1(env: dict[str, str]) -> None:
    result = run_cli({**env, "PIPELINE_APP": ""}, "worker", "--app", "no_such_module_here")
    assert result.returncode == 1
    assert "cannot import app module 'no_such_module_here'" in result.stderr
    assert "ModuleNotFoundError" in result.stderr


def test_migrate_twice_reports_up_to_date(env: dict[str, str]) -> None:
    result = run_cli(env, "migrate")
    assert result.returncode == 0 and "up to date" in result.stdout


def test_a_tenant_named_dash_never_gets_the_document_of_no_tenant(
    env: dict[str, str], conn: Conn
) -> None:
    tender = str(REPO / "sample_docs" / "tender.pdf")
    dashed = run_cli(env, "submit", tender, "--tenant", "-")
    untenanted = run_cli(env, "submit", tender)
    again = run_cli(env, "submit", tender, "--tenant", "-")
    assert [r.returncode for r in (dashed, untenanted, again)] == [0, 0, 0]
    assert "submitted as" in dashed.stderr and "submitted as" in untenanted.stderr
    assert "already submitted" in again.stderr, "dedup within one tenant still holds"
    tenants = conn.execute("SELECT tenant_id FROM pipeline.jobs WHERE type = 'upload' ORDER BY id")
    assert tenants.fetchall() == [("-",), (None,)]


def test_submit_keeps_its_state_and_its_workers_logs_private(
    env: dict[str, str], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    assert not home.exists()
    tender = str(REPO / "sample_docs" / "tender.pdf")
    result = run_cli(env, "submit", tender, "--wait", "--workers", "1", timeout=120)
    assert result.returncode == 0, result.stderr
    logs = list((home / "logs").glob("submit-worker-*.log"))
    assert len(logs) == 1
    # The worker it started was given the documents app (PIPELINE_APP names another here).
    assert "stages ['extract', 'ocr', 'review', 'upload']" in logs[0].read_text()
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (home, home / "logs", logs[0])}
    assert modes == {"home": 0o700, "logs": 0o700, logs[0].name: 0o600}
