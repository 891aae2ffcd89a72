"""`pipeline dashboard` as a person uses it: the real command on a free port, driven by headless
Chromium through selenium. Each test saves screenshots of the pages it visits to one temporary
directory, whose path the session prints."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from pg_pipeline_documents.tender import TenderFields
from tests.acceptance.cli import REPO, WorkerProcess, run_cli
from tests.acceptance.dashboard_process import served_dashboard
from tests.support.history import finish, make_past_days
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def shots(request: pytest.FixtureRequest) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="pipeline-dashboard-shots-"))
    # Past pytest's capture, so that the path shows in a plain `pytest -q` run.
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(f"\ndashboard screenshots: {folder}", flush=True)
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    profile = tempfile.mkdtemp(prefix="pipeline-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--window-size=1280,900",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def dashboard(env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    # The documents app gives a run's extracted fields their model's order.
    with served_dashboard(env, tmp_path / "dashboard.log", "--app", "documents") as url:
        yield url


def snap(browser: WebDriver, shots: Path, name: str) -> None:
    # As tall as the page, so that the screenshot shows all of it.
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, max(600, min(int(height) + 40, 2400)))
    browser.save_screenshot(str(shots / f"{name}.png"))
    browser.set_window_size(1280, 900)


def text_at(browser: WebDriver, css: str) -> str:
    """The element's text, read in one script call: htmx swaps the overview every 2 s, and an
    element found first and read after may be gone by then (a stale reference)."""
    text = browser.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText.trim() : ''",
        css,
    )
    return str(text)


def add(conn: Conn, type: str, status: str, n: int = 1, **cols: Any) -> list[int]:
    """n jobs in a state, as workers would have left them: queued or running ones in the hot
    table, finished ones moved into the history, 40 s apart up to now."""
    names = ["type", *cols]
    finished = status in ("done", "failed", "cancelled")
    rows = conn.execute(
        f"INSERT INTO pipeline.active_jobs ({', '.join(names)}, status, started_at, attempts) "
        f"SELECT {', '.join(['%s'] * len(names))}, %s, "
        "CASE WHEN %s THEN now() - g * interval '40 seconds' END, 1 "
        "FROM generate_series(1, %s) AS g RETURNING id",
        [type, *cols.values(), "queued" if finished else status, finished, n],
    ).fetchall()
    ids = [int(r[0]) for r in rows]
    if finished:
        make_past_days(conn, 1)
        for g, job_id in enumerate(ids, start=1):
            finish(conn, job_id, status, ago=f"{40 * g} seconds")
    return ids


def test_overview_counts_match_the_database_and_refresh_in_place(
    browser: WebDriver, dashboard: str, conn: Conn, shots: Path
) -> None:
    worker = "7d3c9a52-0000-4000-8000-000000000001"
    conn.execute(
        "INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency) "
        "VALUES (%s, 'ocr-box-1', 4242, ARRAY['upload', 'ocr', 'extract'], 4)",
        (worker,),
    )
    conn.execute(
        "INSERT INTO pipeline.schedules (name, stage, cron, timezone, source, next_fire_at) "
        "VALUES ('nightly-report', 'extract', '0 2 * * *', 'Europe/Berlin', 'cli', "
        "now() + interval '5 hours')"
    )
    add(conn, "ocr", "queued", 7, tenant_id="acme")
    add(conn, "ocr", "running", 2, tenant_id="acme", worker_id=worker)
    add(conn, "ocr", "done", 40, tenant_id="acme")
    add(conn, "extract", "done", 12, tenant_id="zeta")
    add(conn, "extract", "failed", 3, tenant_id="zeta", last_error="LLM answer invalid")

    browser.get(dashboard + "/")
    browser.execute_script("window.notReloaded = true")

    counts = dict(conn.execute("SELECT stage, queued FROM pipeline.stage_counts").fetchall())
    assert text_at(browser, 'tr[data-stage="ocr"] [data-col="queued"]') == str(counts["ocr"])
    assert text_at(browser, 'tr[data-stage="ocr"] [data-col="running"]') == "2"
    assert text_at(browser, 'tr[data-stage="ocr"] [data-col="done_1h"]') == "40"
    assert text_at(browser, 'tr[data-stage="extract"] [data-col="failed_1h"]') == "3"
    workers = text_at(browser, "#workers")
    assert "ocr-box-1" in workers and "ocr \u00d7 2" in workers
    assert "nightly-report" in text_at(browser, "#schedules")
    snap(browser, shots, "overview")

    add(conn, "ocr", "queued", 5, tenant_id="acme")
    wait_for(
        lambda: text_at(browser, 'tr[data-stage="ocr"] [data-col="queued"]') == "12",
        what="the overview to refresh",
    )
    assert browser.execute_script("return window.notReloaded") is True  # htmx, not a reload


def test_a_filter_narrows_the_jobs_table(
    browser: WebDriver, dashboard: str, conn: Conn, shots: Path
) -> None:
    add(conn, "ocr", "done", 5, tenant_id="acme")
    failed = add(conn, "extract", "failed", 2, tenant_id="zeta", last_error="no deadline found")

    browser.get(dashboard + "/jobs")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#jobs tbody tr[data-job]")) == 7
    browser.find_element(By.NAME, "stage").send_keys("extract")
    browser.find_element(By.ID, "apply").click()

    def shown() -> list[int]:
        # One script call: the table is swapped by htmx, and a row found first may be gone
        # by the time it is read.
        ids = browser.execute_script(
            "return [...document.querySelectorAll('#jobs tbody tr[data-job]')]"
            ".map(r => r.dataset.job)"
        )
        return [int(i or 0) for i in ids]

    wait_for(lambda: shown() == sorted(failed, reverse=True), what="the filtered table")
    snap(browser, shots, "jobs")


def test_a_document_grid_turns_from_queued_to_done_while_a_worker_runs(
    browser: WebDriver,
    dashboard: str,
    env: dict[str, str],
    conn: Conn,
    shots: Path,
    start_worker: Callable[..., WorkerProcess],
) -> None:
    submitted = run_cli(env, "submit", str(REPO / "sample_docs" / "tender.pdf"), "--tenant", "acme")
    assert submitted.returncode == 0, submitted.stderr
    row = conn.execute("SELECT id FROM pipeline.jobs WHERE type = 'upload'").fetchone()
    assert row is not None
    run = int(row[0])
    # Only the upload runs first: it fans out the pages, which stay queued for the browser to see.
    uploader = start_worker("--app", "documents", "--stage", "upload")
    browser.get(f"{dashboard}/runs/{run}")

    def tiles() -> list[str]:
        # One script call: the page polls and swaps the tiles, so found-then-read may go stale.
        found = browser.execute_script(
            "return [...document.querySelectorAll('.stage[data-stage=\"ocr\"] .tile')]"
            ".map(t => t.dataset.status)"
        )
        return [str(t) for t in found]

    wait_for(lambda: tiles() == ["queued", "queued"], what="queued page tiles", timeout=60)
    snap(browser, shots, "run-queued")
    uploader.signal(signal.SIGTERM)
    uploader.wait()

    start_worker("--app", "documents", "--stage", "ocr", "--stage", "extract")
    wait_for(lambda: tiles() == ["done", "done"], what="done page tiles", timeout=90)
    wait_for(
        lambda: "%" in text_at(browser, '#fields tr[data-field="title"]'),
        what="the extracted fields",
        timeout=60,
    )
    assert "Westbrook" in text_at(browser, "#fields")
    # In the output model's order (the command loads the documents app), not jsonb's.
    fields = browser.execute_script(
        "return [...document.querySelectorAll('#fields tr[data-field]')].map(r => r.dataset.field)"
    )
    assert [str(f) for f in fields] == list(TenderFields.model_fields)
    href = browser.execute_script(
        "const t = document.querySelector('.stage[data-stage=\"ocr\"] .tile');"
        "return t ? t.href : ''"
    )
    assert str(href).startswith(f"{dashboard}/jobs/")
    snap(browser, shots, "run")
    browser.get(f"{dashboard}/runs")
    assert f"/runs/{run}" in (
        str(
            browser.execute_script(
                "const a = document.querySelector('#runs a'); return a ? a.href : ''"
            )
        )
    )
    snap(browser, shots, "runs")


def test_retry_and_cancel_change_the_jobs_state(
    browser: WebDriver, dashboard: str, conn: Conn, shots: Path
) -> None:
    [job] = add(conn, "ocr", "failed", tenant_id="acme", last_error="PDFium could not open it")

    def status() -> str:
        found = conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (job,)).fetchone()
        return str(found[0]) if found else ""

    browser.get(f"{dashboard}/jobs/{job}")
    snap(browser, shots, "job")
    browser.find_element(By.ID, "retry").click()
    snap(browser, shots, "confirm")
    assert status() == "failed"  # asking is not doing
    browser.find_element(By.ID, "confirm").click()
    wait_for(lambda: text_at(browser, "#job-status") == "queued", what="the job page, requeued")
    assert status() == "queued"

    browser.find_element(By.ID, "cancel").click()
    browser.find_element(By.ID, "confirm").click()
    wait_for(lambda: text_at(browser, "#job-status") == "cancelled", what="the job, cancelled")
    assert status() == "cancelled"


def test_an_xss_payload_renders_inert(browser: WebDriver, dashboard: str, conn: Conn) -> None:
    evil = "<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>"
    [job] = add(conn, "ocr", "failed", payload=json.dumps({"name": evil}), last_error=evil)

    for path in (f"/jobs/{job}", "/jobs", f"/runs/{job}"):
        browser.get(dashboard + path)
        assert browser.title != "pwned", path
        assert browser.find_elements(By.CSS_SELECTOR, "main img, main script") == [], path
    browser.get(f"{dashboard}/jobs/{job}")
    assert "<script>document.title" in text_at(browser, "#last-error")


def test_the_tenants_page(browser: WebDriver, dashboard: str, conn: Conn, shots: Path) -> None:
    conn.execute(
        "INSERT INTO pipeline.tenant_caps (tenant_id, stage, cap) VALUES ('acme', 'ocr', 4)"
    )
    add(conn, "ocr", "queued", 30, tenant_id="acme")
    add(conn, "ocr", "queued", 4, tenant_id="zeta")

    browser.get(dashboard + "/tenants")

    assert text_at(browser, '#queued tr[data-tenant="acme"]').split()[-1] == "30"
    snap(browser, shots, "tenants")


def test_signing_in_with_the_token_and_out_again(
    browser: WebDriver, env: dict[str, str], tmp_path: Path, conn: Conn, shots: Path
) -> None:
    add(conn, "ocr", "queued", 3)
    token = "browser-token-0123456789abcdef"
    with served_dashboard(
        {**env, "PIPELINE_DASHBOARD_TOKEN": token}, tmp_path / "dashboard.log"
    ) as url:
        browser.get(url + "/jobs")
        assert browser.current_url == url + "/login"
        browser.find_element(By.NAME, "token").send_keys(token)
        browser.find_element(By.CSS_SELECTOR, "form button").click()
        wait_for(lambda: text_at(browser, 'tr[data-stage="ocr"] [data-col="queued"]') == "3")
        snap(browser, shots, "signed-in")

        browser.find_element(By.CSS_SELECTOR, ".sign-out button").click()
        wait_for(lambda: browser.current_url == url + "/login", what="the sign-in page")
        browser.get(url + "/")
        assert browser.current_url == url + "/login"


def test_a_reviewer_corrects_a_field_and_the_run_completes_with_it(
    browser: WebDriver,
    env: dict[str, str],
    tmp_path: Path,
    conn: Conn,
    shots: Path,
    start_worker: Callable[..., WorkerProcess],
) -> None:
    from pg_pipeline.runs import run_status

    review_env = {**env, "PIPELINE_REVIEW_THRESHOLD": "0.82"}  # lots and contact_email asked
    tender = str(REPO / "sample_docs" / "tender.pdf")
    submitted = run_cli(review_env, "submit", tender, "--tenant", "acme", "--review")
    assert submitted.returncode == 0, submitted.stderr
    row = conn.execute("SELECT id FROM pipeline.jobs WHERE type = 'upload'").fetchone()
    assert row is not None
    run = int(row[0])
    worker = start_worker("--app", "documents", environ=review_env)
    wait_for(
        lambda: (s := run_status(conn, run)) is not None and s.status == "waiting",
        what="the run to wait for review",
        timeout=120,
    )

    with served_dashboard(review_env, tmp_path / "dashboard.log", "--app", "documents") as url:
        browser.get(url + "/review?tenant=acme")
        snap(browser, shots, "review-queue")
        browser.find_element(By.CSS_SELECTOR, f'#waits tr[data-run="{run}"] td a').click()
        wait_for(lambda: browser.find_elements(By.ID, "review-form"), what="the review form")
        flagged = browser.execute_script(
            "return [...document.querySelectorAll('#review-fields tr.flagged')]"
            ".map(r => r.dataset.field)"
        )
        assert [str(f) for f in flagged] == ["lots", "contact_email"]
        assert browser.find_elements(By.CSS_SELECTOR, 'tr[data-field="contact_email"] img.region')
        email = browser.find_element(By.NAME, "field.contact_email")
        assert email.get_attribute("value") == "procurement@westbrook-city.example"
        snap(browser, shots, "review-form")
        email.clear()
        email.send_keys("tenders@westbrook-city.example")
        browser.find_element(By.ID, "correct").click()
        wait_for(lambda: "Answered" in text_at(browser, ".flash"), what="the answer's flash")

        state = wait_for(
            lambda: (s := run_status(conn, run)) is not None and s.ended and s,
            what="the reviewed run to end",
            timeout=120,
        )
        assert state.status == "done", worker.log()
        browser.get(f"{url}/runs/{run}")
        wait_for(lambda: text_at(browser, "#run-status") == "done", what="the run page, done")
        # The review stage's output, as stored (a section the reader unfolds).
        assert "tenders@westbrook-city.example" in browser.page_source
        snap(browser, shots, "review-done")
