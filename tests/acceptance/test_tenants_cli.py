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
    assert done.stdout.strip() == "tenant acme: at most 2 running capped jobs"
    assert caps(conn) == [("acme", "capped", 2)]
    one = run_cli(env, "tenants", "set-cap", "acme", "1", "--stage", "capped")
    assert one.stdout.strip() == "tenant acme: at most 1 running capped job", one.stderr
    run_cli(env, "tenants", "set-cap", "acme", "2", "--stage", "capped")

    listed = run_cli(env, "tenants", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert rows == [
        {
            "kind": "cap",
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


def weights(conn: Conn) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT tenant_id, stage, weight FROM pipeline.tenant_weights ORDER BY 1, 2 NULLS FIRST"
    ).fetchall()


def test_set_list_and_clear_a_tenants_weight(env: dict[str, str], conn: Conn) -> None:
    done = run_cli(env, "tenants", "set-weight", "gold", "4")
    assert done.returncode == 0, done.stderr
    assert "tenant gold: weight 4 for every stage" in done.stdout
    staged = run_cli(env, "tenants", "set-weight", "gold", "0.5", "--stage", "capped")
    assert staged.returncode == 0, staged.stderr
    assert weights(conn) == [("gold", None, 4.0), ("gold", "capped", 0.5)]

    listed = run_cli(env, "tenants", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [json.loads(line) for line in listed.stdout.splitlines()] == [
        {"kind": "weight", "tenant_id": "gold", "stage": None, "weight": 4.0},
        {"kind": "weight", "tenant_id": "gold", "stage": "capped", "weight": 0.5},
    ]
    table = run_cli(env, "tenants", "list").stdout.splitlines()
    assert ["gold", "(every)", "4"] in [line.split() for line in table]
    status = run_cli(env, "status")
    assert status.returncode == 0, status.stderr
    assert "tenant weights (2 set; every other tenant weighs 1)" in status.stdout

    cleared = run_cli(env, "tenants", "clear-weight", "gold", "--stage", "capped")
    assert cleared.returncode == 0, cleared.stderr
    assert weights(conn) == [("gold", None, 4.0)]
    again = run_cli(env, "tenants", "clear-weight", "gold", "--stage", "capped")
    assert again.returncode == 1 and "has no weight for stage capped" in again.stderr


@pytest.mark.parametrize("weight", ["0", "-1", "nan", "inf", "two", "2000000"])
def test_a_weight_that_is_not_a_positive_number_is_refused(
    env: dict[str, str], conn: Conn, weight: str
) -> None:
    done = run_cli(env, "tenants", "set-weight", "gold", weight)
    assert done.returncode == 2 and "weight" in done.stderr, done.stderr
    assert weights(conn) == []


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
