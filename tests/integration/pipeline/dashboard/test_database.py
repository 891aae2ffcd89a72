"""What a visitor can cost the database through the dashboard: at most its pool's size of
backends however many slow pages it asks for at once, and no statement longer than the
dashboard's statement timeout. Real slowness: a table or a row locked by another transaction,
which a page's statements wait on until they are cancelled."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
from starlette.testclient import TestClient

from pg_pipeline import dashboard
from tests.integration.pipeline.dashboard.test_pages import LOCAL, insert, status_of
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]


@contextlib.contextmanager
def locked(db_url: str, statement: str, *params: Any) -> Iterator[None]:
    """`statement` (a LOCK or a SELECT ... FOR UPDATE) held by a transaction of its own."""
    with psycopg.connect(db_url) as holder:  # not autocommit: the lock lasts until the exit
        holder.execute(statement, params)  # type: ignore[arg-type]
        yield
        holder.rollback()


def dashboard_backends(conn: Conn) -> int:
    """Backends of this database that pg-pipeline opened (the test's own have no name)."""
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name LIKE 'pg-pipeline%%' AND pid <> pg_backend_pid()"
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_page_slower_than_the_statement_timeout_is_a_503_that_says_so(
    db_url: str, conn: Conn
) -> None:
    insert(conn, "ocr")
    app = dashboard.app(db_url, token="", statement_timeout_s=0.5)
    with (
        locked(db_url, "LOCK TABLE pipeline.jobs IN ACCESS EXCLUSIVE MODE"),
        TestClient(app, base_url=LOCAL) as c,
    ):
        pages = {path: c.get(path) for path in ("/", "/jobs?q=boom", "/tenants")}

    for path, page in pages.items():
        assert page.status_code == 503, path
        assert "Too slow" in page.text and "within 0.5 s" in page.text, path
        assert "Traceback" not in page.text


def test_a_change_waiting_on_a_locked_row_gives_up_at_the_statement_timeout(
    db_url: str, conn: Conn
) -> None:
    job = insert(conn, "ocr", "failed", last_error="x")
    app = dashboard.app(db_url, token="", statement_timeout_s=0.5)
    with TestClient(app, base_url=LOCAL) as c:
        confirm = c.get(f"/jobs/{job}/retry").text
        token = confirm.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        with locked(db_url, "SELECT 1 FROM pipeline.job_history WHERE id = %s FOR UPDATE", job):
            retry = c.post(f"/jobs/{job}/retry", data={"csrf": token})

    assert retry.status_code == 503
    assert "Too slow" in retry.text and "nothing was changed" in retry.text
    assert status_of(conn, job) == "failed"


def test_concurrent_slow_pages_hold_no_more_backends_than_the_pool(db_url: str, conn: Conn) -> None:
    app = dashboard.app(db_url, token="", pool_size=2, statement_timeout_s=1)
    seen: list[int] = []
    with (
        locked(db_url, "LOCK TABLE pipeline.jobs IN ACCESS EXCLUSIVE MODE"),
        TestClient(app, base_url=LOCAL) as c,
        ThreadPoolExecutor(8) as visitors,
    ):
        asked = [visitors.submit(c.get, f"/jobs?q=slow-filter-{n}") for n in range(8)]

        def answered() -> bool:
            seen.append(dashboard_backends(conn))
            return all(page.done() for page in asked)

        wait_for(answered, timeout=120, what="every slow page to give up")
    pages = [page.result() for page in asked]

    assert max(seen) == 2  # the pool was full, and never more than full
    assert [page.status_code for page in pages] == [503] * 8
    for page in pages:
        assert "Too slow" in page.text or "Busy" in page.text, page.text
