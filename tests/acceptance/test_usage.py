"""`pipeline usage` and its price table as a user types them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import psycopg

from tests.acceptance.cli import run_cli

Conn = psycopg.Connection[Any]


def add(conn: Conn, tenant: str | None, stage: str, counter: str, amount: float) -> None:
    today = datetime.now(UTC).date()
    conn.execute(
        "SELECT pipeline.add_usage(ARRAY[%s::date], ARRAY[%s::text], ARRAY[%s], ARRAY[%s],"
        " ARRAY[%s::float8], ARRAY[2::bigint])",
        (today, tenant, stage, counter, amount),
    )


def test_usage_by_tenant_in_money_once_prices_are_set(env: dict[str, str], conn: Conn) -> None:
    add(conn, "acme", "ocr", "pages", 40)
    add(conn, "acme", "extract", "tokens_in", 10_000)
    add(conn, "beta", "ocr", "pages", 2)
    add(conn, None, "ocr", "cpu_s", 1.5)

    before = run_cli(env, "usage", "--by", "tenant", "--json")
    assert before.returncode == 0, before.stderr
    lines = [json.loads(line) for line in before.stdout.splitlines()]
    assert {(x["key"], x["counter"], x["amount"], x["cost"]) for x in lines} == {
        (None, "cpu_s", 1.5, None),
        ("acme", "pages", 40.0, None),
        ("acme", "tokens_in", 10_000.0, None),
        ("beta", "pages", 2.0, None),
    }

    assert (
        run_cli(env, "usage", "prices", "set", "pages", "0.01", "--currency", "eur").returncode == 0
    )
    assert run_cli(env, "usage", "prices", "set", "tokens_in", "0.000002").returncode == 0
    refused = run_cli(env, "usage", "prices", "set", "cpu_s", "0.1", "--currency", "USD")
    assert refused.returncode == 2 and "one currency for all" in refused.stderr
    listed = run_cli(env, "usage", "prices", "list").stdout
    assert "pages" in listed and "EUR" in listed and "cpu_s" not in listed

    report = run_cli(env, "usage", "--by", "tenant", "--tenant", "acme")
    assert report.returncode == 0, report.stderr
    assert "cost in EUR:" in report.stdout and "acme: 0.4200" in report.stdout
    assert "beta" not in report.stdout
    by_stage = run_cli(env, "usage", "--json").stdout
    ocr_pages = [
        x
        for x in map(json.loads, by_stage.splitlines())
        if x["key"] == "ocr" and x["counter"] == "pages"
    ]
    assert ocr_pages == [
        {
            "key": "ocr",
            "counter": "pages",
            "amount": 42.0,
            "attempts": 4,
            "cost": 0.42,
            "currency": "EUR",
        }
    ]

    assert run_cli(env, "usage", "prices", "clear", "pages").returncode == 0
    assert run_cli(env, "usage", "prices", "clear", "pages").returncode == 1


def test_bad_input_is_a_usage_error(env: dict[str, str]) -> None:
    for args in (
        ("usage", "--since", "yesterday"),
        ("usage", "--by", "hour"),
        ("usage", "prices", "set", "pages", "-1"),
        ("usage", "prices", "set", "pages", "nan"),
        ("usage", "prices", "set", "cost", "1"),
        ("usage", "prices", "set", "1pages", "1"),
        ("usage", "prices", "set", "pages", "1", "--currency", "euro"),
    ):
        got = run_cli(env, *args)
        assert got.returncode == 2, (args, got.stderr)
    assert "neither a date" in run_cli(env, "usage", "--since", "yesterday").stderr


def test_an_empty_report_says_so(env: dict[str, str]) -> None:
    got = run_cli(env, "usage", "--since", "2026-01-01", "--by", "day")
    assert got.returncode == 0 and "no usage recorded" in got.stdout
