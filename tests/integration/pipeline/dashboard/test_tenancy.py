"""The dashboard seen through a token scoped to one tenant, and its pages either side of a
keyset cursor: Starlette's TestClient on a real PostgreSQL."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from pydantic import BaseModel
from starlette.testclient import TestClient

from pg_pipeline import dashboard
from pg_pipeline.admin import jobs as admin_jobs
from pg_pipeline.dashboard.security import SESSION_COOKIE
from pg_pipeline.stage import Registry, stage
from tests.integration.pipeline.dashboard.test_pages import LOCAL, cell, insert, job_ids, status_of

Conn = psycopg.Connection[Any]
ACME = "acme-token-0123456789abcdef"
ZETA = "zeta-token-0123456789abcdef"
ADMIN = "admin-token-0123456789abcdef"
#: Off loopback: the tokens, not the address, are what let a request act.
REMOTE = "http://dash.example"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def app(db_url: str) -> Any:
    return dashboard.app(db_url, token=ADMIN, tenant_tokens={"acme": ACME, "zeta": ZETA})


@pytest.fixture
def acme(app: Any) -> Iterator[TestClient]:
    with TestClient(app, base_url=REMOTE, headers=bearer(ACME)) as c:
        yield c


def csrf_of(client: TestClient, path: str) -> str:
    page = client.get(path)
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
    assert found, page.text
    return found[1]


@pytest.fixture
def token(acme: TestClient, conn: Conn) -> str:
    """A CSRF token of the acme client's session, from a confirmation page of its own."""
    mine = insert(conn, "ocr", "failed", tenant_id="acme", last_error="mine")
    return csrf_of(acme, f"/jobs/{mine}/retry")


# -- a tenant's token --------------------------------------------------------------------------


def test_a_tenant_token_counts_its_own_jobs_alone_on_the_overview(
    acme: TestClient, conn: Conn
) -> None:
    for _ in range(2):
        insert(conn, "ocr", tenant_id="acme")
    insert(conn, "ocr", "failed", tenant_id="acme", last_error="x")
    for _ in range(5):
        insert(conn, "ocr", tenant_id="zeta")
    insert(conn, "ocr", "running", tenant_id="zeta", leased_until="now() - interval '1 minute'")
    insert(conn, "extract", "done", tenant_id="zeta")
    conn.execute(
        "INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency) "
        "VALUES ('00000000-0000-0000-0000-0000000000aa', 'box-of-zeta', 1, ARRAY['ocr'], 4)"
    )

    html = acme.get("/").text

    assert (cell(html, "ocr", "queued"), cell(html, "ocr", "failed_1h")) == ("2", "1")
    assert (cell(html, "ocr", "running"), cell(html, "ocr", "expired")) == ("0", "0")
    assert 'data-stage="extract"' not in html  # zeta's stage, none of acme's jobs
    assert 'id="expired-total">0<' in html
    assert "box-of-zeta" not in html  # workers serve every tenant: not shown to one
    assert "tenant <strong>acme</strong>" in html and "all tenants" not in html


def test_a_tenant_token_lists_and_searches_its_own_jobs_alone(acme: TestClient, conn: Conn) -> None:
    mine = insert(conn, "ocr", "failed", tenant_id="acme", last_error="PDFium: bad xref")
    insert(conn, "ocr", "failed", tenant_id="zeta", last_error="PDFium: bad xref")
    insert(conn, "ocr", tenant_id="zeta")
    insert(conn, "ocr", "failed", last_error="PDFium: bad xref")  # no tenant at all

    assert job_ids(acme.get("/jobs").text) == [mine]
    assert job_ids(acme.get("/jobs?q=xref").text) == [mine]
    assert job_ids(acme.get("/jobs?status=queued").text) == []
    assert acme.get("/jobs?tenant=zeta").status_code == 403
    assert job_ids(acme.get("/jobs?tenant=acme").text) == [mine]


def test_another_tenants_job_and_run_do_not_exist_for_a_tenant_token(
    acme: TestClient, conn: Conn
) -> None:
    root = insert(conn, "upload", "done", tenant_id="zeta")
    page = insert(conn, "ocr", "failed", parent_id=root, root_id=root, tenant_id="zeta")
    running = insert(conn, "ocr", "running", tenant_id="zeta")
    missing = running + 1000

    for path, theirs in (
        ("/jobs/{}", root),
        ("/jobs/{}", page),
        ("/runs/{}", root),
        ("/runs/{}", page),
        ("/jobs/{}/retry", page),
        ("/jobs/{}/cancel", running),
    ):
        found, none = acme.get(path.format(theirs)), acme.get(path.format(missing))
        assert found.status_code == 404, path
        # The same page as for an id nobody has: nothing tells the two apart.
        assert re.sub(rf"\b{theirs}\b", "N", found.text) == re.sub(
            rf"\b{missing}\b", "N", none.text
        ), path
    assert f"/runs/{root}" not in acme.get("/runs").text


def test_a_tenant_token_cannot_retry_or_cancel_another_tenants_job(
    acme: TestClient, conn: Conn, token: str
) -> None:
    failed = insert(conn, "ocr", "failed", tenant_id="zeta", last_error="x")
    queued = insert(conn, "ocr", tenant_id="zeta")

    retry = acme.post(f"/jobs/{failed}/retry", data={"csrf": token})
    cancel = acme.post(f"/jobs/{queued}/cancel", data={"csrf": token})

    assert (retry.status_code, cancel.status_code) == (404, 404)
    assert "there is no job" in retry.text
    assert (status_of(conn, failed), status_of(conn, queued)) == ("failed", "queued")


def test_a_bulk_retry_with_a_tenant_token_retries_that_tenants_jobs_alone(
    acme: TestClient, conn: Conn, token: str
) -> None:
    mine = [insert(conn, "ocr", "failed", tenant_id="acme", last_error="x") for _ in range(2)]
    theirs = insert(conn, "ocr", "failed", tenant_id="zeta", last_error="x")
    nobodys = insert(conn, "ocr", "failed", last_error="x")

    # Asking for another tenant, in the URL or in the form, changes nothing either.
    asked = acme.post("/actions/retry-failed?tenant=zeta", data={"csrf": token})
    assert asked.status_code == 403
    assert status_of(conn, mine[0]) == "failed"
    done = acme.post(
        "/actions/retry-failed", data={"csrf": token, "tenant": "zeta"}, follow_redirects=False
    )

    assert done.status_code == 303
    assert [status_of(conn, j) for j in mine] == ["queued", "queued"]
    assert (status_of(conn, theirs), status_of(conn, nobodys)) == ("failed", "failed")
    confirm = acme.get("/actions/retry-failed").text
    assert "of tenant &#39;acme&#39;" in confirm or "of tenant 'acme'" in confirm


def test_a_tenant_token_sees_its_own_caps_queues_and_schedules_alone(
    acme: TestClient, conn: Conn, token: str
) -> None:
    conn.execute(
        "INSERT INTO pipeline.tenant_caps (tenant_id, stage, cap) VALUES ('acme', 'ocr', 4), "
        "('zeta', 'ocr', 9)"
    )
    insert(conn, "ocr", tenant_id="acme")
    for _ in range(3):
        insert(conn, "ocr", tenant_id="zeta")
    conn.execute(
        "INSERT INTO pipeline.schedules (name, stage, tenant_id, every_s, source, next_fire_at) "
        "VALUES ('acme-nightly', 'ocr', 'acme', 60, 'cli', now()), "
        "('zeta-nightly', 'ocr', 'zeta', 60, 'cli', now())"
    )

    tenants = acme.get("/tenants").text
    overview = acme.get("/").text
    paused = acme.post("/schedules/pause", data={"csrf": token, "name": "zeta-nightly"})

    assert set(re.findall(r'data-tenant="(\w+)"', tenants)) == {"acme"}
    assert 'data-schedule="acme-nightly"' in overview
    assert "zeta-nightly" not in overview
    assert paused.status_code == 404
    row = conn.execute("SELECT paused FROM pipeline.schedules WHERE name = 'zeta-nightly'")
    assert row.fetchone() == (False,)


def test_signing_in_with_a_tenant_token_scopes_the_session(app: Any, conn: Conn) -> None:
    mine = insert(conn, "ocr", tenant_id="acme")
    theirs = insert(conn, "ocr", tenant_id="zeta")
    with TestClient(app, base_url=REMOTE) as c:
        assert c.get("/jobs", follow_redirects=False).headers["location"] == "/login"
        signed = c.post("/login", data={"token": ZETA}, follow_redirects=False)
        assert signed.status_code == 303
        assert ZETA not in signed.headers["set-cookie"] and SESSION_COOKIE in c.cookies

        assert job_ids(c.get("/jobs").text) == [theirs]
        assert c.get(f"/jobs/{mine}").status_code == 404
        # A bearer token wins over the cookie, and a wrong one is refused outright.
        assert job_ids(c.get("/jobs", headers=bearer(ACME)).text) == [mine]
        assert c.get("/jobs", headers=bearer("nope"), follow_redirects=False).status_code == 303


def test_a_sign_in_from_another_site_is_refused(app: Any) -> None:
    with TestClient(app, base_url=REMOTE) as c:
        page = c.post("/login", data={"token": ACME}, headers={"Origin": "https://evil.example"})
        assert page.status_code == 403 and SESSION_COOKIE not in c.cookies


def test_the_full_token_still_sees_every_tenant(app: Any, conn: Conn) -> None:
    a = insert(conn, "ocr", tenant_id="acme")
    z = insert(conn, "ocr", tenant_id="zeta")
    with TestClient(app, base_url=REMOTE, headers=bearer(ADMIN)) as c:
        assert job_ids(c.get("/jobs").text) == [z, a]
        assert job_ids(c.get("/jobs?tenant=zeta").text) == [z]


def test_tenant_tokens_come_from_their_variable(
    db_url: str, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_DASHBOARD_TENANT_TOKENS", f"acme={ACME}")
    monkeypatch.delenv("PIPELINE_DASHBOARD_TOKEN", raising=False)
    mine = insert(conn, "ocr", tenant_id="acme")
    insert(conn, "ocr", tenant_id="zeta")
    with TestClient(dashboard.app(db_url), base_url=LOCAL) as c:
        # Tokens configured: even on loopback, no request goes without one.
        assert c.get("/jobs", follow_redirects=False).status_code == 303
        assert job_ids(c.get("/jobs", headers=bearer(ACME)).text) == [mine]


def test_a_dashboard_for_one_tenant_refuses_tokens_of_others(db_url: str) -> None:
    with pytest.raises(ValueError, match="zeta"):
        dashboard.app(db_url, tenant="acme", tenant_tokens={"zeta": ZETA})
    # Its own tenant's token is fine: the product pins it, the token signs in.
    dashboard.app(db_url, tenant="acme", tenant_tokens={"acme": ACME})


def test_a_confirmation_for_a_job_that_is_not_there_is_a_404(db_url: str) -> None:
    with TestClient(dashboard.app(db_url, token=""), base_url=LOCAL) as c:
        assert c.get("/jobs/424242/retry").status_code == 404
        assert c.get("/jobs/424242/cancel").status_code == 404


# -- pages either side of a keyset cursor --------------------------------------------------------


def link(html: str, name: str) -> str | None:
    found = re.search(rf'href="([^"]+)" id="{name}"', html)
    return found[1].replace("&amp;", "&") if found else None


@pytest.fixture
def local(db_url: str) -> Iterator[TestClient]:
    with TestClient(dashboard.app(db_url, token=""), base_url=LOCAL) as c:
        yield c


def test_newer_pages_back_to_the_first_without_gaps_or_repeats(
    local: TestClient, conn: Conn
) -> None:
    ids = sorted((insert(conn, "ocr") for _ in range(45)), reverse=True)
    pages: list[list[int]] = []
    path: str | None = "/jobs?limit=20&stage=ocr"
    while path:
        html = local.get(path).text
        pages.append(job_ids(html))
        if len(pages) == 1:
            assert link(html, "newer") is None and link(html, "first") is None
        else:
            assert link(html, "first") == "/jobs?limit=20&stage=ocr"
        last, path = html, link(html, "older")
    assert pages == [ids[:20], ids[20:40], ids[40:]]

    back: list[list[int]] = []
    newer = link(last, "newer")
    while newer:
        html = local.get(newer).text
        back.append(job_ids(html))
        newer = link(html, "newer")
    assert back == [ids[20:40], ids[:20]]
    assert link(html, "first") is None  # back on the first page, which has no newer one
    assert "stage=ocr" in (link(html, "older") or "")  # the filters stay on every link


def test_newer_shows_the_jobs_just_above_the_cursor_and_fills_the_first_page(
    local: TestClient, conn: Conn
) -> None:
    ids = [insert(conn, "ocr") for _ in range(25)]
    second = local.get(link(local.get("/jobs?limit=20").text, "older") or "").text
    assert job_ids(second) == ids[:5][::-1]
    added = [insert(conn, "ocr") for _ in range(3)]

    newer = local.get(link(second, "newer") or "").text
    # Fewer than a page above the cursor: the first page, full, as "first page" shows it.
    top = local.get(f"/jobs?limit=20&after={ids[15]}").text

    assert job_ids(newer) == ids[5:25][::-1]  # the 20 just above, and a newer page still
    assert link(newer, "newer") is not None and link(newer, "older") is not None
    assert job_ids(top) == (ids + added)[::-1][:20]
    assert link(top, "newer") is None and link(top, "first") is None


def test_newer_and_older_together_are_a_400(local: TestClient) -> None:
    page = local.get("/jobs?before=10&after=3")
    assert page.status_code == 400 and "not both" in page.text


def test_the_error_search_reads_a_window_and_pages_on_below_it(
    local: TestClient, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(admin_jobs, "SEARCH_WINDOW", 4)
    jobs = []
    for i in range(12):
        error = "PDFium xref" if i % 3 == 0 else "timeout"
        jobs.append((insert(conn, "ocr", "failed", last_error=error), error))
    insert(conn, "ocr", "queued", last_error="PDFium xref (retrying)")  # not searched here
    insert(conn, "ocr", "done", last_error="PDFium xref")
    wanted = [j for j, error in reversed(jobs) if error == "PDFium xref"]

    seen: list[int] = []
    path: str | None = "/jobs?q=xref&limit=20"
    pages = 0
    while path:
        html = local.get(path).text
        seen += job_ids(html)
        pages += 1
        assert 'id="searched"' in html and "at most 4 per page" in html
        path = link(html, "older")
        assert pages < 10

    assert seen == wanted
    assert pages == 3  # 12 failed jobs, 4 per window
    assert "search older" in local.get("/jobs?q=xref&limit=20").text
    queued = local.get("/jobs?q=xref&status=queued").text
    assert len(job_ids(queued)) == 1 and 'id="searched"' not in queued
    assert local.get("/jobs?q=xref&status=done").status_code == 400


def test_the_error_search_pages_newer_too(
    local: TestClient, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(admin_jobs, "SEARCH_WINDOW", 5)
    ids = [insert(conn, "ocr", "failed", last_error="boom") for _ in range(12)]
    newest = ids[::-1]
    first = local.get("/jobs?q=boom&limit=20").text
    assert job_ids(first) == newest[:5]
    second = local.get(link(first, "older") or "").text
    third = local.get(link(second, "older") or "").text
    assert (job_ids(second), job_ids(third)) == (newest[5:10], newest[10:])

    back = local.get(link(third, "newer") or "").text

    assert job_ids(back) == newest[5:10]
    assert job_ids(local.get(link(back, "newer") or "").text) == newest[:5]


# -- the run page's fields in the model's order -------------------------------------------------


class Extracted(BaseModel):
    title: str | None = None
    issuing_authority: str | None = None
    reference: str | None = None
    evidence: dict[str, Any] = {}


class Pages(BaseModel):
    pages: int


def test_a_runs_fields_come_in_the_output_models_order(db_url: str, conn: Conn) -> None:
    registry = Registry()

    @stage("extract", registry=registry)
    def extract(job: Pages, ctx: Any) -> Extracted:
        return Extracted()

    root = insert(conn, "upload", "done")
    job = insert(conn, "extract", "done", parent_id=root, root_id=root)
    output = {
        "reference": "R-1",
        "title": "Road works",
        "issuing_authority": "City",
        "evidence": {"title": {"confidence": 0.9}},
    }
    conn.execute(
        "INSERT INTO pipeline.outputs (root_id, stage, job_id, attempt, output) "
        "VALUES (%s, 'extract', %s, 1, %s)",
        (root, job, json.dumps(output)),
    )

    def fields(app: Any) -> list[str]:
        with TestClient(app, base_url=LOCAL) as c:
            return re.findall(r'<tr data-field="(\w+)"', c.get(f"/runs/{root}").text)

    ordered = fields(dashboard.app(db_url, token="", registry=registry))
    stored = fields(dashboard.app(db_url, token="", registry=Registry()))

    assert ordered == ["title", "issuing_authority", "reference"]
    assert stored == ["title", "reference", "issuing_authority"]  # jsonb: shortest key first
