"""`pipeline limits` through the real CLI: capacities set, listed with what their windows hold
and the jobs waiting, cleared, and bad input refused."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from pg_pipeline import JobRequest, enqueue_many
from pg_pipeline.store import JobStore
from tests.acceptance.cli import run_cli

Conn = psycopg.Connection[Any]


def test_set_list_and_clear_a_limit(env: dict[str, str], conn: Conn, pool: ConnectionPool) -> None:
    import tests.support.apps.limits_app  # noqa: F401  registers "limited" for enqueue_many

    enqueue_many(conn, [JobRequest("limited", {"key": "api-1", "units": 4}) for _ in range(3)])
    done = run_cli(env, "limits", "set", "test-units", "10", "--per", "60")
    assert done.returncode == 0, done.stderr
    assert "10 unit(s) per 60 s for every key" in done.stdout
    own = run_cli(env, "limits", "set", "test-units", "5", "--per", "30", "--key", "api-2")
    assert own.returncode == 0, own.stderr
    # The claim takes two of three (8 of 10 units); the third waits.
    assert len(JobStore(pool).claim(["limited"], 10, uuid.UUID(int=3))) == 2

    listed = run_cli(env, "limits", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {(r["name"], r["key"]): r for r in map(json.loads, listed.stdout.splitlines())}
    assert rows[("test-units", "api-1")] == {
        "name": "test-units",
        "key": "api-1",
        "capacity": 10,
        "per_seconds": 60,
        "source": "set",
        "capacity_key": "*",
        "used": 8,
        "waiting": 1,
        "waiting_units": 4,
    }
    assert rows[("test-units", "api-2")]["capacity"] == 5
    assert rows[("test-units", "*")]["used"] == 0
    table = run_cli(env, "limits", "list")
    assert table.returncode == 0, table.stderr
    line = next(x for x in table.stdout.splitlines() if "api-1" in x)
    assert line.split()[:5] == ["test-units", "api-1", "10/60s", "8", "1"]

    cleared = run_cli(env, "limits", "clear", "test-units", "--key", "api-2")
    assert cleared.returncode == 0, cleared.stderr
    assert "cleared for api-2" in cleared.stdout
    all_cleared = run_cli(env, "limits", "clear", "test-units")
    assert all_cleared.returncode == 0 and "cleared for *" in all_cleared.stdout
    again = run_cli(env, "limits", "clear", "test-units")
    assert again.returncode == 1 and "no capacity to clear" in again.stderr
    assert conn.execute("SELECT count(*) FROM pipeline.rate_limits").fetchone() == (0,)


@pytest.mark.parametrize(
    "args",
    [
        ["limits", "set", "x", "-1", "--per", "60"],
        ["limits", "set", "x", "2.5", "--per", "60"],
        ["limits", "set", "x", "10"],
        ["limits", "set", "x", "10", "--per", "0"],
        ["limits", "set", "x", "10", "--per", "86401"],
        ["limits", "set", " x", "10", "--per", "60"],
        ["limits", "set", "x", "10", "--per", "60", "--key", ""],
    ],
)
def test_bad_input_is_a_usage_error(env: dict[str, str], conn: Conn, args: list[str]) -> None:
    done = run_cli(env, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert conn.execute("SELECT count(*) FROM pipeline.rate_limits").fetchone() == (0,)
