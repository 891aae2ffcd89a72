"""The usage readers (pipeline/admin/usage.py): a run's usage from its jobs and attempts, the
window's per stage, tenant and day from the rollup, in money through the price table."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from pydantic import BaseModel

from pg_pipeline import Context, enqueue
from pg_pipeline.admin import usage as admin
from pg_pipeline.stage import Registry, stage
from pg_pipeline.testing import drain

Conn = psycopg.Connection[Any]
REG = Registry()


class Pages(BaseModel):
    pages: int
    fail_times: int = 0


@stage("scan", registry=REG, then="read", max_attempts=3, backoff_base=0.01, backoff_cap=0.01)
def scan(job: Pages, ctx: Context) -> Pages:
    ctx.usage(pages=job.pages)
    if ctx.attempt <= job.fail_times:
        raise RuntimeError("scanner jammed")
    return job


@stage("read", registry=REG)
def read(job: Pages, ctx: Context) -> None:
    ctx.usage(tokens_in=100 * job.pages, model="m")


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        yield c


def amounts(lines: list[admin.UsageLine], counter: str) -> dict[str | None, float]:
    return {line.key: line.amount for line in lines if line.counter == counter}


def test_a_runs_usage_counts_every_attempt_of_every_job_once(db_url: str, conn: Conn) -> None:
    run = enqueue(conn, "scan", {"pages": 3, "fail_times": 1}, tenant_id="acme", registry=REG)
    other = enqueue(conn, "scan", {"pages": 50}, tenant_id="acme", registry=REG)
    assert drain(db_url, registry=REG).ok
    lines = admin.run_usage(conn, run)
    assert amounts(lines, "pages") == {"scan": 6.0}  # the retried attempt's 3 pages too
    assert amounts(lines, "tokens_in") == {"read": 300.0}
    assert {(x.key, x.attempts) for x in lines if x.counter == "wall_s"} == {
        ("scan", 2),
        ("read", 1),
    }
    assert admin.run_usage(conn, run, tenant="beta") == []

    admin.set_price(conn, "pages", 0.5, "EUR")
    admin.set_price(conn, "tokens_in", 0.001)
    assert admin.cost_of(admin.run_usage(conn, run)) == pytest.approx(3.3)
    jobs = admin.job_usage(conn, run)
    assert jobs[run]["pages"] == 6.0 and len(jobs) == 2
    assert admin.money(jobs[run], admin.prices(conn)) == pytest.approx(3.0)

    per_run = admin.usage(conn, by="run", since=datetime.now(UTC).date())
    assert amounts(per_run, "pages") == {str(run): 6.0, str(other): 50.0}
    assert admin.costs_by_key(per_run)[str(other)] == pytest.approx(25 + 5)


def test_the_window_reads_per_stage_tenant_and_day(db_url: str, conn: Conn) -> None:
    enqueue(conn, "scan", {"pages": 2}, tenant_id="acme", registry=REG)
    enqueue(conn, "scan", {"pages": 5}, registry=REG)
    assert drain(db_url, registry=REG).ok
    today = datetime.now(UTC).date()
    assert amounts(admin.usage(conn, by="stage", since=today), "pages") == {"scan": 7.0}
    assert amounts(admin.usage(conn, by="tenant", since=today), "pages") == {
        None: 5.0,
        "acme": 2.0,
    }
    assert amounts(admin.usage(conn, by="day", since=today, tenant="acme"), "pages") == {
        today.isoformat(): 2.0
    }


def test_prices_are_in_one_currency(conn: Conn) -> None:
    assert admin.set_price(conn, "pages", 0.01).currency == admin.DEFAULT_CURRENCY
    assert admin.set_price(conn, "tokens_in", 0.1).currency == admin.DEFAULT_CURRENCY
    with pytest.raises(admin.CurrencyMismatch, match="one currency for all"):
        admin.set_price(conn, "cpu_s", 0.1, "EUR")
    assert admin.set_price(conn, "pages", 0.02, "USD").price == 0.02  # its own price changes
    assert admin.clear_price(conn, "pages") and admin.clear_price(conn, "tokens_in")
    assert not admin.clear_price(conn, "pages")
    assert admin.set_price(conn, "cpu_s", 0.1, "EUR").currency == "EUR"  # an empty table
