"""A document's cost on its run page, and the tenants by cost (docs/usage.md)."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool
from starlette.testclient import TestClient

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import enqueue
from pg_pipeline.admin.usage import set_price
from pg_pipeline.attempt_logs import AttemptLog
from pg_pipeline.store import JobStore
from tests.integration.pipeline.dashboard.test_pages import client  # noqa: F401  the fixture

Conn = psycopg.Connection[Any]


def finish(conn: Conn, pool: ConnectionPool, tenant: str, counters: dict[str, float]) -> int:
    """A job of `tenant` done with `counters` reported and 0.5 CPU seconds: its run's id."""
    job_id = enqueue(conn, "noop", {}, tenant_id=tenant)
    store = JobStore(pool)
    [job] = store.claim(["noop"], 1, uuid.UUID(int=5))
    assert job.id == job_id
    store.complete([job.fence], {job.id: AttemptLog(time.time(), None, 0, 1.0, 0.5, counters)})
    return job_id


def test_a_runs_page_shows_what_it_consumed_and_cost(
    client: TestClient,  # noqa: F811
    conn: Conn,
    pool: ConnectionPool,
) -> None:
    run = finish(conn, pool, "acme", {"pages": 4.0})
    html = client.get(f"/runs/{run}").text
    assert 'id="usage"' in html and "cost" not in html.split('id="usage"')[1].split("</h2>")[0]
    assert re.search(
        r'data-stage="noop" data-counter="pages"><td>noop</td><td>pages</td>'
        r'<td class="n">4</td>',
        html,
    )
    set_price(conn, "pages", 0.25, "EUR")
    html = client.get(f"/runs/{run}").text
    assert "<h2>Usage: cost 1.0000</h2>" in html


def test_the_tenants_page_lists_tenants_by_cost(
    client: TestClient,  # noqa: F811
    conn: Conn,
    pool: ConnectionPool,
) -> None:
    finish(conn, pool, "cheap", {"pages": 1.0})
    finish(conn, pool, "dear", {"pages": 100.0})
    html = client.get("/tenants").text
    assert "No prices set" in html
    set_price(conn, "pages", 0.5)
    html = client.get("/tenants").text
    table = html.split('id="costs"')[1].split("</table>")[0]
    assert re.findall(r'<tr data-tenant="(\w+)">', table) == ["dear", "cheap"]
    assert '<td class="n">50.0000</td>' in table
    only = client.get("/tenants?tenant=cheap").text.split('id="costs"')[1]
    assert "dear" not in only.split("</table>")[0]
