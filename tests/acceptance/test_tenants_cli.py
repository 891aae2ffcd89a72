"""`pipeline tenants` through the real CLI: caps set, listed, cleared, and bad input refused."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from pg_pipeline import JobRequest, enqueue_many
from tests.acceptance.cli import run_cli

Conn = psycopg.Connection[Any]


def caps(conn: Conn) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT tenant_id, stage, cap FROM pipeline.tenant_caps ORDER BY 1, 2"
    ).fetchall()


def test_set_list_and_clear_a_tenants_cap(env: dict[str, str], conn: Conn) -> None:
    import tests.support.apps.jobs_app  # noqa: F401  registers "capped" for enqueue_many

    enqueue_many(conn, [JobRequest("capped", {}, tenant_id="acme") for _ in range(4)])
    done = run_cli(env, "tenants", "set-cap", "acme", "2", "--stage", "capped")
    assert done.returncode == 0, done.stderr
    assert caps(conn) == [("acme", "capped", 2)]

    listed = run_cli(env, "tenants", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert rows == [
        {
            "tenant_id": "acme",
            "stage": "capped",
            "cap": 2,
            "running": 0,
            "queued": 4,
            "default_cap": 3,
        }
    ]
    table = run_cli(env, "tenants", "list")
    assert "acme" in table.stdout and "capped" in table.stdout

    cleared = run_cli(env, "tenants", "clear-cap", "acme", "--stage", "capped")
    assert cleared.returncode == 0, cleared.stderr
    assert caps(conn) == []
    again = run_cli(env, "tenants", "clear-cap", "acme", "--stage", "capped")
    assert again.returncode == 1 and "has no cap" in again.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["tenants", "set-cap", "acme", "-1", "--stage", "capped"],
        ["tenants", "set-cap", "acme", "2.5", "--stage", "capped"],
        ["tenants", "set-cap", "acme", "two", "--stage", "capped"],
        ["tenants", "set-cap", "acme", "2", "--stage", "no_such_stage"],
        ["tenants", "set-cap", "", "2", "--stage", "capped"],
        ["tenants", "set-cap", "acme", "2"],
        ["worker", "--tenant-cap", "-3"],
    ],
)
def test_bad_caps_are_refused_with_exit_2_and_change_nothing(
    env: dict[str, str], conn: Conn, args: list[str]
) -> None:
    done = run_cli(env, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert caps(conn) == []
