"""The dashboard's pages and actions through Starlette's TestClient, on a real PostgreSQL."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from pg_pipeline import dashboard
from pg_pipeline.admin import jobs as admin_jobs
from pg_pipeline.admin.budgets import set_budget
from pg_pipeline.admin.tenants import set_weight
from pg_pipeline.dashboard.security import CSRF_COOKIE, SESSION_COOKIE
from tests.support.history import finish

Conn = psycopg.Connection[Any]
#: The TestClient's server address is its base URL's host: loopback, as `pipeline dashboard`
#: binds by default, so actions are on.
LOCAL = "http://127.0.0.1"


def insert(conn: Conn, type: str, status: str = "queued", **cols: Any) -> int:
    """One job in any state, as the worker would leave it."""
    values: dict[str, Any] = {"type": type, "status": status, "payload": json.dumps({})} | cols
    if status in ("done", "failed", "cancelled"):
        values.setdefault("finished_at", "now()")
        values.setdefault("started_at", "now()")
        values.setdefault("attempts", 1)
    if status == "running":
        values.setdefault("leased_until", "now() + interval '5 minutes'")
        values.setdefault("started_at", "now()")
        values.setdefault("attempts", 1)
    names = list(values)
    exprs = [
        str(values[n]) if isinstance(values[n], str) and values[n].startswith("now()") else "%s"
        for n in names
    ]
    params = [v for n, v in values.items() if not (isinstance(v, str) and v.startswith("now()"))]
    table = "active_jobs" if status in ("queued", "running") else "job_history"
    row = conn.execute(
        f"INSERT INTO pipeline.{table} ({', '.join(names)}) "  # type: ignore[arg-type]
        f"VALUES ({', '.join(exprs)}) RETURNING id",
        params,
    ).fetchone()
    assert row is not None
    return int(row[0])


def status_of(conn: Conn, job_id: int) -> str:
    row = conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None
    return str(row[0])


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient]:
    with TestClient(dashboard.app(db_url, token=""), base_url=LOCAL) as c:
        yield c


def csrf(client: TestClient, path: str) -> str:
    """The CSRF token of the confirmation form at `path` (which sets the cookie it pairs with)."""
    page = client.get(path)
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
    assert found, page.text
    return found[1]


def cell(html: str, stage: str, col: str) -> str:
    row = re.search(rf'<tr data-stage="{stage}">(.*?)</tr>', html, re.S)
    assert row, f"no row for {stage}"
    found = re.search(rf'data-col="{col}">(?:<a [^>]*>)?([^<]*)', row[1])
    assert found, f"no {col} in {row[1]}"
    return found[1].strip()


def job_ids(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr data-job="(\d+)"', html)]


# -- overview --------------------------------------------------------------------------------


def test_overview_counts_match_the_monitoring_views(client: TestClient, conn: Conn) -> None:
    for _ in range(3):
        insert(conn, "ocr")
    insert(conn, "ocr", "running")
    insert(conn, "ocr", "failed", last_error="boom")
    for _ in range(2):
        insert(conn, "extract", "done")
    insert(conn, "extract", "running", leased_until="now() - interval '1 minute'")

    page = client.get("/")

    assert page.status_code == 200
    html = page.text
    assert (cell(html, "ocr", "queued"), cell(html, "ocr", "running")) == ("3", "1")
    assert cell(html, "ocr", "failed_1h") == "1"
    assert (cell(html, "extract", "done_1h"), cell(html, "extract", "expired")) == ("2", "1")
    assert 'id="expired-total">1<' in html
    views = dict(conn.execute("SELECT stage, queued FROM pipeline.stage_counts").fetchall())
    assert views == {"ocr": 3, "extract": 0}
    assert 'hx-trigger="every 2.0s"' in html  # refreshes itself, without reloading the page


def test_overview_refresh_is_a_fragment_with_the_chart(client: TestClient, conn: Conn) -> None:
    insert(conn, "ocr", "done")
    insert(conn, "ocr", "failed", last_error="x")

    part = client.get("/", headers={"HX-Request": "true"})

    assert part.status_code == 200
    assert "<html" not in part.text
    assert '<svg id="throughput"' in part.text
    assert "1 done, 1 failed" in part.text  # the current minute's bar


def test_the_chart_has_a_scale_up_to_the_busiest_minute_and_time_labels(
    client: TestClient, conn: Conn
) -> None:
    for _ in range(6):
        insert(conn, "ocr", "done")
    insert(conn, "ocr", "failed", last_error="x")

    svg = re.search(r'<svg id="throughput".*?</svg>', client.get("/").text, re.S)

    assert svg, "no chart"
    y = re.findall(r'data-tick="y">([^<]*)<', svg[0])
    x = re.findall(r'data-tick="x">([^<]*)<', svg[0])
    assert y == ["0", "3", "7"]  # the busiest minute: this one, 6 done and 1 failed
    assert [label.split(" (")[0] for label in x] == ["\u221260 min", "\u221230 min", "now"]


def test_overview_lists_live_workers_with_what_they_run_and_schedules(
    client: TestClient, conn: Conn
) -> None:
    worker = "00000000-0000-0000-0000-0000000000aa"
    conn.execute(
        "INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency) "
        "VALUES (%s, 'box-1', 4242, ARRAY['ocr'], 4)",
        (worker,),
    )
    insert(conn, "ocr", "running", worker_id=worker)
    conn.execute(
        "INSERT INTO pipeline.schedules (name, stage, every_s, source, next_fire_at) "
        "VALUES ('nightly', 'ocr', 60, 'cli', now() + interval '1 minute')"
    )

    html = client.get("/").text

    assert "box-1" in html and "ocr \u00d7 1" in html and "1/4" in html
    assert 'data-schedule="nightly"' in html and "pause" in html


# -- jobs ------------------------------------------------------------------------------------


def test_jobs_filters_narrow_the_table(client: TestClient, conn: Conn) -> None:
    a = insert(conn, "ocr", "failed", tenant_id="acme", last_error="PDFium: bad xref")
    b = insert(conn, "ocr", "done", tenant_id="acme")
    c = insert(conn, "extract", "failed", tenant_id="zeta", last_error="LLM said 100%_sure")
    old = insert(conn, "ocr", "done", tenant_id="acme", created_at="now() - interval '3 days'")

    assert job_ids(client.get("/jobs").text) == [old, c, b, a]
    assert job_ids(client.get("/jobs?stage=ocr").text) == [old, b, a]
    assert job_ids(client.get("/jobs?status=failed").text) == [c, a]
    assert job_ids(client.get("/jobs?tenant=zeta").text) == [c]
    assert job_ids(client.get("/jobs?q=xref").text) == [a]
    assert job_ids(client.get("/jobs?q=100%25_").text) == [c]  # % and _ match themselves
    assert job_ids(client.get("/jobs?q=1%25x").text) == []
    since = conn.execute("SELECT to_char(now() - interval '1 day', 'YYYY-MM-DD\"T\"HH24:MI')")
    row = since.fetchone()
    assert row is not None
    assert old not in job_ids(client.get(f"/jobs?since={row[0]}&zone=Z").text)
    assert job_ids(client.get(f"/jobs?until={row[0]}Z").text) == [old]


def stage_options(html: str) -> list[str]:
    found = re.search(r'<datalist id="stage-names">(.*?)</datalist>', html, re.S)
    assert found, "no stage list"
    return re.findall(r'<option value="([^"]*)">', found[1])


def test_the_stage_filter_offers_recorded_queued_and_running_stages(
    client: TestClient, conn: Conn
) -> None:
    conn.execute(
        "INSERT INTO pipeline.stages (name, version, max_attempts, lease_seconds, priority, "
        "recorded_by, hostname) VALUES ('classify', 'v1', 3, 60, 0, gen_random_uuid(), 'h'), "
        "('classify', 'v2', 3, 60, 0, gen_random_uuid(), 'h')"
    )
    insert(conn, "ocr", tenant_id="acme")
    insert(conn, "ocr", tenant_id="zeta")
    insert(conn, "upload")  # untenanted
    insert(conn, "extract", "running", tenant_id="zeta")
    insert(conn, "archived", "done")  # finished only: not offered

    html = client.get("/jobs").text

    assert 'name="stage" value="" size="12" list="stage-names"' in html
    assert stage_options(html) == ["classify", "extract", "ocr", "upload"]
    # For one tenant: the recorded stages and that tenant's queued or running ones alone.
    assert stage_options(client.get("/jobs?tenant=acme").text) == ["classify", "ocr"]


def test_the_stage_list_reads_at_most_its_limit(conn: Conn) -> None:
    for stage in ("a", "b", "c", "d"):
        insert(conn, stage)
    assert admin_jobs.stage_names(conn, limit=2) == ["a", "b"]


def test_jobs_pages_by_keyset_without_gaps_or_repeats(client: TestClient, conn: Conn) -> None:
    ids = [insert(conn, "ocr") for _ in range(45)]

    seen: list[int] = []
    path: str | None = "/jobs?limit=20"
    while path:
        html = client.get(path).text
        seen += job_ids(html)
        found = re.search(r'href="([^"]+)" id="older"', html)
        path = found[1].replace("&amp;", "&") if found else None

    assert seen == sorted(ids, reverse=True)


def test_the_jobs_form_labels_its_time_fields_utc_and_sends_that_zone(client: TestClient) -> None:
    form = client.get("/jobs").text
    assert 'name="zone" value="Z"' in form
    assert 'created from (UTC) <input type="datetime-local" name="since"' in form


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("status=exploded", "status must be one of"),
        ("since=yesterday", "since is not an ISO 8601 time"),
        ("since=2026-01-02T10:00", "since has no UTC offset"),
        ("since=2026-01-02&until=2026-01-01&zone=Z", "since must be before until"),
        ("limit=7", "limit must be one of"),
        ("before=-3", "before must be a whole number"),
        ("stage=" + "x" * 201, "longer than 200"),
    ],
)
def test_malformed_filters_are_a_400_with_the_reason(
    client: TestClient, query: str, reason: str
) -> None:
    page = client.get(f"/jobs?{query}")
    assert page.status_code == 400
    assert reason in page.text


def test_a_job_page_shows_payload_timeline_run_and_children(client: TestClient, conn: Conn) -> None:
    root = insert(conn, "split", "done", payload=json.dumps({"pages": 2}))
    kids = [insert(conn, "page", parent_id=root, root_id=root) for _ in range(2)]

    html = client.get(f"/jobs/{root}").text

    assert "&#34;pages&#34;: 2" in html or "&quot;pages&quot;: 2" in html
    assert f'href="/runs/{root}"' in html
    assert all(f'href="/jobs/{k}"' in html for k in kids)
    assert "enqueued" in html and "finished" in html
    child = client.get(f"/jobs/{kids[0]}").text
    assert f'href="/jobs/{root}"' in child  # its parent


def test_payload_and_error_holding_script_render_as_text(client: TestClient, conn: Conn) -> None:
    evil = "<script>alert('xss')</script><img src=x onerror=alert(1)>"
    job = insert(conn, "ocr", "failed", payload=json.dumps({"note": evil}), last_error=evil)

    for path in (f"/jobs/{job}", "/jobs", f"/runs/{job}"):
        html = client.get(path).text
        assert "<script>alert" not in html and "<img src=x" not in html, path
        assert "&lt;script&gt;" in html, path


@pytest.mark.parametrize("path", ["/jobs/999999", "/runs/999999", "/no/such/page"])
def test_unknown_ids_and_pages_are_a_404_page(client: TestClient, path: str) -> None:
    page = client.get(path)
    assert page.status_code == 404
    assert "Not found" in page.text and "Traceback" not in page.text


def test_a_malformed_id_is_a_400(client: TestClient) -> None:
    assert client.get("/jobs/abc").status_code == 400
    assert client.get("/runs/99999999999999999999").status_code == 400


# -- runs ------------------------------------------------------------------------------------


def test_a_document_run_shows_its_pages_and_extracted_fields(
    client: TestClient, conn: Conn
) -> None:
    root = insert(conn, "upload", "done", tenant_id="acme")
    pages = [
        insert(conn, "ocr", s, parent_id=root, root_id=root, join_id=None, tenant_id="acme")
        for s in ("done", "running", "queued")
    ]
    extract = insert(conn, "extract", "done", parent_id=root, root_id=root, tenant_id="acme")
    output = {
        "title": "Road <b>works</b>",
        "cpv_codes": ["45233140-2"],
        "evidence": {"title": {"confidence": 0.93, "rule": "label", "page": 1}},
        "warnings": [],
        "extractor": "offline",
    }
    conn.execute(
        "INSERT INTO pipeline.outputs (root_id, stage, job_id, attempt, output) "
        "VALUES (%s, 'extract', %s, 1, %s)",
        (root, extract, json.dumps(output)),
    )

    html = client.get(f"/runs/{root}").text

    tiles = re.findall(r'class="tile (\w+)" data-job="(\d+)"', html)
    assert [(s, int(j)) for s, j in tiles if int(j) in pages] == [
        ("done", pages[0]),
        ("running", pages[1]),
        ("queued", pages[2]),
    ]
    assert 'data-stage="upload"' in html and 'data-stage="extract"' in html
    assert html.index('data-stage="upload"') < html.index('data-stage="ocr"')
    assert "Road &lt;b&gt;works&lt;/b&gt;" in html and "93%" in html
    assert "hx-trigger" in html  # not finished: it refreshes itself
    assert f"/runs/{root}" in client.get("/runs").text


# -- actions ---------------------------------------------------------------------------------


def test_retry_asks_for_confirmation_then_requeues(client: TestClient, conn: Conn) -> None:
    job = insert(conn, "ocr", "failed", last_error="boom")
    token = csrf(client, f"/jobs/{job}/retry")
    assert status_of(conn, job) == "failed"  # the GET only asked

    done = client.post(f"/jobs/{job}/retry", data={"csrf": token}, follow_redirects=False)

    assert done.status_code == 303
    assert status_of(conn, job) == "queued"
    assert "Job retried" in client.get(done.headers["location"]).text
    again = client.post(f"/jobs/{job}/retry", data={"csrf": token})
    assert again.status_code == 409  # a queued job cannot be retried


def test_cancel_stops_a_queued_job(client: TestClient, conn: Conn) -> None:
    job = insert(conn, "ocr")
    token = csrf(client, f"/jobs/{job}/cancel")

    assert client.post(f"/jobs/{job}/cancel", data={"csrf": token}).status_code == 200
    assert status_of(conn, job) == "cancelled"


def test_a_post_without_the_csrf_token_changes_nothing(client: TestClient, conn: Conn) -> None:
    job = insert(conn, "ocr")
    csrf(client, f"/jobs/{job}/cancel")  # has the cookie, not the form's token

    assert client.post(f"/jobs/{job}/cancel", data={"csrf": "0" * 64}).status_code == 403
    assert client.post(f"/jobs/{job}/cancel").status_code == 403
    token = csrf(client, f"/jobs/{job}/cancel")
    cross = client.post(
        f"/jobs/{job}/cancel", data={"csrf": token}, headers={"Origin": "https://evil.example"}
    )
    assert cross.status_code == 403
    assert status_of(conn, job) == "queued"


def test_retry_all_failed_of_a_stage(client: TestClient, conn: Conn) -> None:
    ocr = [insert(conn, "ocr", "failed", last_error="x") for _ in range(3)]
    other = insert(conn, "extract", "failed", last_error="x")
    token = csrf(client, "/actions/retry-failed?stage=ocr")

    client.post("/actions/retry-failed", data={"csrf": token, "stage": "ocr"})

    assert [status_of(conn, j) for j in ocr] == ["queued"] * 3
    assert status_of(conn, other) == "failed"


def test_pause_and_resume_a_schedule(client: TestClient, conn: Conn) -> None:
    conn.execute(
        "INSERT INTO pipeline.schedules (name, stage, every_s, source, next_fire_at) "
        "VALUES ('nightly/report', 'ocr', 60, 'cli', now())"
    )

    def paused() -> bool:
        row = conn.execute("SELECT paused FROM pipeline.schedules").fetchone()
        return bool(row and row[0])

    token = csrf(client, "/schedules/pause?name=nightly%2Freport")
    client.post("/schedules/pause", data={"csrf": token, "name": "nightly/report"})
    assert paused()
    client.post("/schedules/resume", data={"csrf": token, "name": "nightly/report"})
    assert not paused()
    missing = client.post("/schedules/pause", data={"csrf": token, "name": "nope"})
    assert missing.status_code == 404


def test_read_only_offers_and_accepts_no_change(db_url: str, conn: Conn) -> None:
    job = insert(conn, "ocr", "failed", last_error="x")
    with TestClient(dashboard.app(db_url, read_only=True, token=""), base_url=LOCAL) as c:
        assert 'id="retry"' not in c.get(f"/jobs/{job}").text
        assert c.get(f"/jobs/{job}/retry").status_code == 403
        assert c.post(f"/jobs/{job}/retry", data={"csrf": "x"}).status_code == 403
    assert status_of(conn, job) == "failed"


def test_off_loopback_without_a_token_actions_are_off(db_url: str, conn: Conn) -> None:
    job = insert(conn, "ocr", "failed", last_error="x")
    app = dashboard.app(db_url, token="", hosts=["dash.example"])
    with TestClient(app, base_url="http://dash.example") as c:
        assert 'id="retry"' not in c.get(f"/jobs/{job}").text
        assert c.get(f"/jobs/{job}/retry").status_code == 403


# -- tenants, scoping, tokens ------------------------------------------------------------------


def test_tenants_page_shows_caps_queues_and_the_noisiest(client: TestClient, conn: Conn) -> None:
    conn.execute(
        "INSERT INTO pipeline.tenant_caps (tenant_id, stage, cap) VALUES ('acme', 'ocr', 4)"
    )
    for _ in range(5):
        insert(conn, "ocr", tenant_id="acme")
    insert(conn, "ocr", tenant_id="zeta")

    html = client.get("/tenants").text

    assert re.search(r'data-tenant="acme" data-stage="ocr">.*?>4<', html, re.S)
    queued = re.findall(r'<tr data-tenant="(\w+)"><td>\w+</td><td class="n">(\d+)', html)
    assert queued[:2] == [("acme", "5"), ("zeta", "1")]


def test_tenants_page_shows_weights_and_budgets(client: TestClient, conn: Conn) -> None:
    set_weight(conn, "acme", 4)
    set_budget(conn, "acme", 10, counter="pages", per="day")
    conn.execute(
        "INSERT INTO pipeline.usage_by_day (day, tenant_id, stage, counter, shard, amount, "
        "attempts) VALUES ((now() AT TIME ZONE 'UTC')::date, 'acme', 'ocr', 'pages', 0, 10, 1)"
    )

    html = client.get("/tenants").text

    assert re.search(
        r'id="weights">.*?<td>acme</td><td>every stage</td><td class="n">4<', html, re.S
    )
    assert re.search(r'data-tenant="acme" data-state="exhausted">.*?claims stopped', html, re.S)


def test_a_tenant_filter_hides_every_other_tenant(client: TestClient, conn: Conn) -> None:
    mine = insert(conn, "ocr", "failed", tenant_id="acme", last_error="x")
    theirs = insert(conn, "ocr", "failed", tenant_id="zeta", last_error="x")

    html = client.get("/?tenant=acme").text
    assert cell(html, "ocr", "failed_1h") == "1"
    assert job_ids(client.get("/jobs?tenant=acme").text) == [mine]
    assert client.get(f"/jobs/{theirs}?tenant=acme").status_code == 404
    assert client.get(f"/runs/{theirs}?tenant=acme").status_code == 404
    assert 'href="/jobs?tenant=acme"' in client.get("/?tenant=acme").text  # links keep it
    token = csrf(client, "/actions/retry-failed?tenant=acme")
    client.post("/actions/retry-failed?tenant=acme", data={"csrf": token})
    assert (status_of(conn, mine), status_of(conn, theirs)) == ("queued", "failed")


def test_a_dashboard_pinned_to_a_tenant_refuses_others(db_url: str, conn: Conn) -> None:
    theirs = insert(conn, "ocr", "failed", tenant_id="zeta", last_error="x")
    with TestClient(dashboard.app(db_url, tenant="acme", token=""), base_url=LOCAL) as c:
        assert c.get("/jobs?tenant=zeta").status_code == 403
        assert c.get(f"/jobs/{theirs}").status_code == 404
        token = csrf(c, "/actions/retry-failed")
        assert c.post(f"/jobs/{theirs}/retry", data={"csrf": token}).status_code == 404
    assert status_of(conn, theirs) == "failed"


def test_with_a_token_every_page_needs_it(db_url: str) -> None:
    app = dashboard.app(db_url, token="s3cret-token")
    with TestClient(app, base_url="http://dash.example") as c:
        assert c.get("/", follow_redirects=False).headers["location"] == "/login"
        assert c.get("/", headers={"Authorization": "Bearer s3cret-token"}).status_code == 200
        assert c.post("/login", data={"token": "wrong"}).status_code == 401
        signed = c.post("/login", data={"token": "s3cret-token"}, follow_redirects=False)
        assert signed.status_code == 303
        assert "s3cret-token" not in signed.headers["set-cookie"]
        assert SESSION_COOKIE in c.cookies
        page = c.get("/")
        assert page.status_code == 200 and "read-only" not in page.text


def test_database_down_is_a_503_page_that_retries_and_hides_the_password() -> None:
    app = dashboard.app("postgresql://app:hunter2pw@127.0.0.1:1/shop", token="")
    with TestClient(app, base_url=LOCAL) as c:
        for path in ("/", "/jobs", "/jobs/1"):
            page = c.get(path)
            assert page.status_code == 503, path
            assert "Database unreachable" in page.text and "hunter2pw" not in page.text
            assert page.headers["retry-after"] == "5"
            assert 'http-equiv="refresh"' in page.text
        part = c.get("/", headers={"HX-Request": "true"})
        assert part.status_code == 503 and "<html" not in part.text


def test_it_mounts_under_a_prefix_in_another_app(db_url: str, conn: Conn) -> None:
    job = insert(conn, "ocr", "failed", last_error="x")
    outer = Starlette(routes=[Mount("/queue", app=dashboard.app(db_url, token=""))])
    with TestClient(outer, base_url=LOCAL) as c:
        html = c.get("/queue/").text
        assert 'href="/queue/jobs"' in html and 'src="/queue/static/htmx.min.js"' in html
        assert c.get("/queue/static/htmx.min.js").status_code == 200
        confirm = c.get(f"/queue/jobs/{job}/retry").text
        assert f'action="/queue/jobs/{job}/retry"' in confirm
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', confirm)
        assert token
        done = c.post(f"/queue/jobs/{job}/retry", data={"csrf": token[1]}, follow_redirects=False)
        assert done.headers["location"].startswith(f"/queue/jobs/{job}")
    assert status_of(conn, job) == "queued"


def test_every_response_carries_a_strict_content_security_policy(client: TestClient) -> None:
    page = client.get("/")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    assert CSRF_COOKIE in page.cookies


def test_a_finished_run_tells_htmx_to_stop_polling(client: TestClient, conn: Conn) -> None:
    root = insert(conn, "split", "done")
    insert(conn, "page", "running", parent_id=root, root_id=root)
    assert client.get(f"/runs/{root}", headers={"HX-Request": "true"}).status_code == 200
    children = conn.execute(
        "SELECT id FROM pipeline.active_jobs WHERE root_id = %s", (root,)
    ).fetchall()
    finish(conn, [child for (child,) in children])

    part = client.get(f"/runs/{root}", headers={"HX-Request": "true"})

    assert part.status_code == 286 and "<html" not in part.text
    assert "hx-trigger" not in client.get(f"/runs/{root}").text


def test_a_query_over_its_time_is_a_page_that_says_so(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow(conn: Conn, query: Any) -> Any:
        conn.execute("SET statement_timeout = 10")
        conn.execute("SELECT pg_sleep(1)")

    monkeypatch.setattr(admin_jobs, "page_jobs", slow)
    page = client.get("/jobs?q=anything")
    assert page.status_code == 503
    assert "Too slow" in page.text and "narrow the filters" in page.text
    assert 'http-equiv="refresh"' not in page.text


def test_limits_page_shows_each_keys_window_and_waiting_jobs(
    client: TestClient, conn: Conn
) -> None:
    conn.execute(
        "INSERT INTO pipeline.rate_limits (name, key, units, per_seconds) "
        "VALUES ('llm-tokens', '*', 1000, 60)"
    )
    conn.execute(
        "INSERT INTO pipeline.rate_limit_used (name, key, second, units) "
        "VALUES ('llm-tokens', 'api-1', floor(extract(epoch FROM now())), 900)"
    )
    job = insert(conn, "extract")
    conn.execute(
        "UPDATE pipeline.active_jobs SET limits = "
        """'[{"name": "llm-tokens", "key": "api-1", "units": 300}]' WHERE id = %s""",
        (job,),
    )

    html = client.get("/limits").text

    row = re.search(r'<tr data-limit="llm-tokens" data-key="api-1">(.*?)</tr>', html, re.S)
    assert row is not None
    cells = re.findall(r'<td class="n">([^<]*)</td>', row[1])
    assert cells == ["900", "1000", "60 s", "1"]
    assert 'aria-label="900 of 1000"' in row[1]
    # Scoped to a tenant: only the keys named after it, never another key's traffic.
    scoped = client.get("/limits?tenant=acme").text
    assert "data-key=" not in scoped
