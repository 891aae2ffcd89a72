"""`pipeline runs` as an operator types it, against a real database."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from tests.acceptance.cli import run_cli

Conn = psycopg.Connection[Any]


def failed_run(conn: Conn, tenant: str) -> tuple[int, int, int]:
    """A root (done) whose fan-out has a page failed for good and one still queued, as the
    worker leaves them. Returns (run, failed page, queued page)."""
    [(root,)] = conn.execute(
        "INSERT INTO pipeline.job_history (type, tenant_id, status, finished_at)"
        " VALUES ('split', %s, 'done', now()) RETURNING id",
        (tenant,),
    ).fetchall()
    [(failed,)] = conn.execute(
        "INSERT INTO pipeline.job_history (type, tenant_id, status, finished_at, parent_id,"
        " root_id, last_error) VALUES ('page', %s, 'failed', now(), %s, %s, 'torn page')"
        " RETURNING id",
        (tenant, root, root),
    ).fetchall()
    [(queued,)] = conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id, parent_id, root_id)"
        " VALUES ('page', %s, %s, %s) RETURNING id",
        (tenant, root, root),
    ).fetchall()
    return root, failed, queued


def test_list_show_and_cancel_a_failed_run(env: dict[str, str], conn: Conn) -> None:
    root, failed, queued = failed_run(conn, "acme")
    other, _, _ = failed_run(conn, "globex")

    listed = run_cli(env, "runs", "list", "--status", "failed", "--tenant", "acme", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert (row["id"], row["status"], row["blocked_job_id"]) == (root, "failed", failed)
    assert (row["jobs"], row["active"], row["blocked_reason"]) == (3, 1, "torn page")
    table = run_cli(env, "runs", "list")
    assert f"job {failed}: torn page" in table.stdout and str(other) in table.stdout

    shown = run_cli(env, "runs", "show", str(root))
    assert shown.returncode == 0, shown.stderr
    assert f"run {root}: failed" in shown.stdout
    assert f"blocked by job {failed}: torn page" in shown.stdout
    assert run_cli(env, "runs", "show", str(root), "--tenant", "globex").returncode == 1
    status = run_cli(env, "status")
    assert "runs: 2 failed" in status.stdout, status.stdout

    cancelled = run_cli(env, "runs", "cancel", str(root), "--reason", "bad scan")
    assert cancelled.returncode == 0, cancelled.stderr
    assert f"{root}: cancelled 1 job" in cancelled.stdout
    after = json.loads(run_cli(env, "runs", "show", str(root), "--json").stdout)
    assert after["status"] == "cancelled"
    assert after["stages"]["page"] == {"failed": 1, "cancelled": 1}
    row = conn.execute("SELECT status, last_error FROM pipeline.jobs WHERE id = %s", (queued,))
    assert row.fetchone() == ("cancelled", "bad scan")


def test_a_job_waiting_alone_is_listed_and_shown_as_a_waiting_run(
    env: dict[str, str], conn: Conn
) -> None:
    [(job,)] = conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id, status)"
        " VALUES ('approve', 'acme', 'waiting') RETURNING id"
    ).fetchall()
    run, _, _ = failed_run(conn, "acme")

    listed = run_cli(env, "runs", "list", "--status", "waiting", "--tenant", "acme", "--json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert (row["id"], row["status"], row["jobs"], row["active"]) == (job, "waiting", 1, 1)
    every = json.loads(run_cli(env, "runs", "list", "--json").stdout)
    assert [(r["id"], r["status"]) for r in every] == [(run, "failed"), (job, "waiting")]
    other = run_cli(env, "runs", "list", "--status", "waiting", "--tenant", "globex", "--json")
    assert json.loads(other.stdout) == [], other.stderr
    shown = run_cli(env, "runs", "show", str(job))
    assert shown.returncode == 0, shown.stderr
    assert f"run {job}: waiting" in shown.stdout
