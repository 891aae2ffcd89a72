"""The runs list and the run page show the stored run status, and what blocks a failed run."""

from __future__ import annotations

import re
import uuid
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool
from starlette.testclient import TestClient

from pg_pipeline.store import JobStore
from tests.integration.pipeline.dashboard.test_pages import client  # noqa: F401  the fixture
from tests.integration.pipeline.test_run_status import fan_out_root

Conn = psycopg.Connection[Any]


def test_a_failed_fan_out_shows_failed_with_the_step_it_will_never_reach(
    client: TestClient,  # noqa: F811
    conn: Conn,
    pool: ConnectionPool,
) -> None:
    store = JobStore(pool)
    root, _ = fan_out_root(conn, store, 3)
    pages = sorted(store.claim(["page"], 10, uuid.UUID(int=3)), key=lambda j: j.id)
    store.fail(pages[1], "page 1 is unreadable")
    store.complete([pages[0].fence, pages[2].fence])

    html = client.get(f"/runs/{root}").text

    assert re.search(r'id="run-status">failed<', html)
    assert f'id="blocked-by">job {pages[1].id}<' in html
    assert "page 1 is unreadable" in html
    blocked = re.search(r'class="stage blocked" data-stage="(\w+)" data-blocked-by="(\d+)"', html)
    assert blocked is not None and blocked.groups() == ("assemble", str(pages[1].id))
    assert "hx-trigger" not in html  # nothing further can happen: it stops refreshing
    listed = client.get("/runs").text
    assert f'<tr data-run="{root}" data-status="failed">' in listed
    assert f"job {pages[1].id}</a>: page 1 is unreadable" in listed


def test_a_running_run_refreshes_and_draws_no_blocked_step(
    client: TestClient,  # noqa: F811
    conn: Conn,
    pool: ConnectionPool,
) -> None:
    root, _ = fan_out_root(conn, JobStore(pool), 2)
    html = client.get(f"/runs/{root}").text
    assert re.search(r'id="run-status">running<', html)
    assert "stage blocked" not in html and "hx-trigger" in html
