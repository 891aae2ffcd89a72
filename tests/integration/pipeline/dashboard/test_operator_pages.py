"""The job page's attempts and log lines, and the schedules and workers pages (issue 23, item 7),
through Starlette's TestClient on a real PostgreSQL."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool
from starlette.testclient import TestClient

from pg_pipeline import dashboard
from pg_pipeline.attempt_logs import AttemptLog
from pg_pipeline.store import JobStore
from tests.integration.pipeline.dashboard.test_pages import LOCAL, insert

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID("00000000-0000-0000-0000-0000000000aa")


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient]:
    with TestClient(dashboard.app(db_url, token=""), base_url=LOCAL) as c:
        yield c


def test_the_nav_links_the_schedules_and_workers_pages(client: TestClient) -> None:
    html = client.get("/").text
    assert 'href="/schedules"' in html and 'href="/workers"' in html


def test_a_job_page_lists_its_attempts_and_their_log_lines(
    client: TestClient, conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    job_id = insert(conn, "ocr")
    [first] = store.claim(["ocr"], 1, WORKER)
    log = AttemptLog(started=0.0, text="reading page 1\n<script>x</script>", dropped=0)
    assert store.retry_later(first, "upstream 503", 0, log=log)
    [second] = store.claim(["ocr"], 1, WORKER)
    later = AttemptLog(started=0.0, text="reading page 1 again", dropped=7)
    assert store.complete([second.fence], {job_id: later}) == {job_id}

    html = client.get(f"/jobs/{job_id}").text

    rows = re.findall(r'<tr data-claim="(\d+)">(.*?)</tr>', html, re.S)
    assert [claim for claim, _ in rows] == ["1", "2"]
    assert "retried" in rows[0][1] and "upstream 503" in rows[0][1]
    assert "done" in rows[1][1] and "upstream" not in rows[1][1]
    assert 'id="last-error"' not in html, "a job done after a failure shows no error"
    assert "reading page 1\n&lt;script&gt;" in html  # a line is text, never markup
    assert "reading page 1 again" in html and "7 more line(s)" in html


def test_a_running_job_shows_its_attempt_in_progress(client: TestClient, conn: Conn) -> None:
    job_id = insert(conn, "ocr", "running", worker_id=str(WORKER), claims=1)

    html = client.get(f"/jobs/{job_id}").text

    [row] = re.findall(r'<tr data-claim="1">(.*?)</tr>', html, re.S)
    assert "running" in row and str(WORKER)[:8] in row
    assert "written when it ends" in html


def test_the_schedules_page_lists_every_schedule(client: TestClient, conn: Conn) -> None:
    conn.execute(
        "INSERT INTO pipeline.schedules (name, stage, every_s, source, next_fire_at, paused, "
        "tenant_id, last_job_id, last_error) VALUES "
        "('nightly', 'ocr', 60, 'cli', now() + interval '1 minute', false, 'acme', 42, NULL), "
        "('hourly', 'ocr', 3600, 'cli', now(), true, 'zeta', NULL, 'payload rejected')"
    )

    page = client.get("/schedules")

    assert page.status_code == 200
    names = re.findall(r'<tr data-schedule="([^"]+)">', page.text)
    assert names == ["nightly", "hourly"]  # unpaused first
    assert 'href="/jobs/42"' in page.text and "payload rejected" in page.text
    scoped = client.get("/schedules?tenant=acme").text
    assert re.findall(r'<tr data-schedule="([^"]+)">', scoped) == ["nightly"]


def test_the_workers_page_lists_live_workers_and_what_they_run(
    client: TestClient, conn: Conn
) -> None:
    conn.execute(
        "INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency) VALUES "
        "(%s, 'box-1', 4242, ARRAY['ocr'], 4), "
        "(%s, 'gone-box', 1, ARRAY['ocr'], 4)",
        (WORKER, uuid.UUID(int=1)),
    )
    conn.execute(
        "UPDATE pipeline.workers SET last_seen = now() - interval '1 hour' WHERE id = %s",
        (uuid.UUID(int=1),),
    )
    insert(conn, "ocr", "running", worker_id=str(WORKER))

    page = client.get("/workers")

    assert page.status_code == 200
    assert re.findall(r'<tr data-worker="([^"]+)">', page.text) == [str(WORKER)]
    assert "box-1" in page.text and "ocr \u00d7 1" in page.text and "1/4" in page.text
    scoped = client.get("/workers?tenant=acme").text
    assert "box-1" not in scoped and "every tenant" in scoped
