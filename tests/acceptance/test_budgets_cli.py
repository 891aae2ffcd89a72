"""`pipeline budgets` through the real CLI: set, listed with their use and state, shown where
caps are, cleared; bad input refused."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from tests.acceptance.cli import run_cli

Conn = psycopg.Connection[Any]


def use(conn: Conn, tenant: str, counter: str, amount: float) -> None:
    conn.execute(
        "INSERT INTO pipeline.usage_by_day (day, tenant_id, stage, counter, shard, amount, "
        "attempts) VALUES ((now() AT TIME ZONE 'UTC')::date, %s, 'capped', %s, 0, %s, 1)",
        (tenant, counter, amount),
    )


def test_set_list_and_clear_a_budget(env: dict[str, str], conn: Conn) -> None:
    done = run_cli(env, "budgets", "set", "acme", "100", "--counter", "pages", "--per", "day")
    assert done.returncode == 0, done.stderr
    assert "tenant acme: at most 100 pages per day for every stage, warning at 80%" in done.stdout
    staged = run_cli(
        env, "budgets", "set", "acme", "2.5", "--counter", "cost", "--per", "month",
        "--stage", "capped", "--warn", "0.5",
    )  # fmt: skip
    assert staged.returncode == 0, staged.stderr
    use(conn, "acme", "pages", 100)

    listed = run_cli(env, "budgets", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert rows == [
        {
            "tenant_id": "acme",
            "stage": None,
            "counter": "pages",
            "per": "day",
            "limit": 100.0,
            "warn": 0.8,
            "used": 100.0,
            "state": "exhausted",
        },
        {
            "tenant_id": "acme",
            "stage": "capped",
            "counter": "cost",
            "per": "month",
            "limit": 2.5,
            "warn": 0.5,
            "used": 0.0,
            "state": "ok",
        },
    ]
    table = run_cli(env, "budgets", "list").stdout.splitlines()
    assert table[1].split() == [
        "acme",
        "(every)",
        "pages",
        "day",
        "100",
        "100",
        "100%",
        "exhausted",
    ]
    # Where caps are shown, a spent budget is too.
    tenants = run_cli(env, "tenants", "list").stdout
    assert "budget: tenant acme used 100 of 100 pages per day for every stage: claims stopped" in (
        tenants
    )
    status = run_cli(env, "status").stdout
    assert "budgets at or past their warning level (1 of 2)" in status

    cleared = run_cli(env, "budgets", "clear", "acme")
    assert cleared.returncode == 0, cleared.stderr
    assert "1 budget(s) for every stage cleared" in cleared.stdout
    again = run_cli(env, "budgets", "clear", "acme")
    assert again.returncode == 1 and "has no such budget" in again.stderr
    assert run_cli(env, "budgets", "clear", "acme", "--stage", "capped").returncode == 0
    assert run_cli(env, "budgets", "list").stdout.strip() == "no budgets"


@pytest.mark.parametrize(
    "args",
    [
        ["acme", "-1", "--counter", "pages", "--per", "day"],
        ["acme", "nan", "--counter", "pages", "--per", "day"],
        ["acme", "10", "--counter", "pages", "--per", "week"],
        ["acme", "10", "--counter", "pages", "--per", "day", "--warn", "0"],
        ["acme", "10", "--counter", "pages", "--per", "day", "--warn", "1.5"],
        ["acme", "10", "--per", "day"],
        ["acme", "10", "--counter", "pages", "--per", "day", "--stage", "no_such_stage"],
    ],
)
def test_a_bad_budget_is_refused(env: dict[str, str], conn: Conn, args: list[str]) -> None:
    done = run_cli(env, "budgets", "set", *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert conn.execute("SELECT count(*) FROM pipeline.budgets").fetchone() == (0,)


def test_a_budget_in_money_without_prices_says_it_stops_nothing(
    env: dict[str, str], conn: Conn
) -> None:
    """Without a price, cost counts 0: such a budget would never stop its tenant, silently."""
    args = ["budgets", "set", "acme", "50", "--counter", "cost", "--per", "month"]
    unpriced = run_cli(env, *args)
    assert unpriced.returncode == 0, unpriced.stderr
    assert "no prices set" in unpriced.stderr
    assert "pipeline usage prices set" in unpriced.stderr
    priced = run_cli(env, "usage", "prices", "set", "pages", "0.01")
    assert priced.returncode == 0, priced.stderr
    again = run_cli(env, *args)
    assert again.returncode == 0 and again.stderr == "", again.stderr
