"""The run page lists each stage's output versions and reruns a finished run from a stage (a
form that asks, then posts with its CSRF token); /runs/{id}/diff shows two versions side by
side, field by field."""

from __future__ import annotations

import re
import uuid
from typing import Any

import psycopg
from starlette.testclient import TestClient

from pg_pipeline.recorded_stages import record_stages
from pg_pipeline.runs import run_status
from pg_pipeline.testing import drain
from tests.integration.pipeline.dashboard.test_pages import client, csrf  # noqa: F401
from tests.integration.pipeline.test_reruns import V2, finished_chain, jobs_of

Conn = psycopg.Connection[Any]


def test_rerun_from_the_run_page_then_compare_the_versions(
    client: TestClient,  # noqa: F811
    conn: Conn,
    db_url: str,
) -> None:
    run_id = finished_chain(db_url, conn, tenant="acme")
    # A worker at vb's version 2 recorded it; the dashboard imports no stage.
    record_stages(conn, V2.select(None), uuid.uuid4(), "host")
    page = client.get(f"/runs/{run_id}").text
    assert re.search(r'<tr data-stage="vb" data-generation="0"><td>vb</td>.*<code>1</code>', page)
    assert 'id="rerun"' in page and '<option value="vb">vb</option>' in page

    token = csrf(client, f"/runs/{run_id}/rerun?stage=vb")
    assert jobs_of(conn, run_id)["vb"] == 1  # the GET only asked
    done = client.post(
        f"/runs/{run_id}/rerun", data={"csrf": token, "stage": "vb"}, follow_redirects=False
    )
    assert done.status_code == 303, done.text
    assert "Run rerun as generation 1." in client.get(done.headers["location"]).text
    assert run_status(conn, run_id).status == "running"  # type: ignore[union-attr]
    again = client.post(f"/runs/{run_id}/rerun", data={"csrf": token, "stage": "vb"})
    assert "Run already rerun as generation 1." in again.text
    assert drain(db_url, registry=V2, run_id=run_id).ok

    page = client.get(f"/runs/{run_id}").text
    assert '<tr data-stage="vb" data-generation="1">' in page
    # The outputs shown are each stage's newest: the rerun's vb and vc, the first va.
    assert page.count("<summary>Output of vb") == 1 and "&#34;split&#34;" in page
    assert "&#34;spaces&#34;" not in page
    link = re.search(r'<a class="compare" href="([^"]+)">compare with generation 0</a>', page)
    assert link is not None
    diff = client.get(link[1].replace("&amp;", "&")).text
    changed = re.findall(r'data-field="(\w+)" class="changed"', diff)
    assert sorted(changed) == ["by", "words"]
    assert 'id="right-version">generation 1 (2)<' in diff
    [(newest,)] = conn.execute(
        "SELECT max(id) FROM pipeline.jobs WHERE root_id = %s AND type = 'vb'", (run_id,)
    ).fetchall()
    job_page = client.get(f"/jobs/{newest}").text
    assert "Generation 1 of its run, made by version <code>2</code>" in job_page
    same = client.get(f"/runs/{run_id}/diff?stage=va")
    assert same.status_code == 404 and "has one output version only" in same.text


def test_a_run_still_running_or_another_tenants_is_not_rerun(
    client: TestClient,  # noqa: F811
    conn: Conn,
    db_url: str,
) -> None:
    run_id = finished_chain(db_url, conn, tenant="acme")
    record_stages(conn, V2.select(None), uuid.uuid4(), "host")
    token = csrf(client, f"/runs/{run_id}/rerun?stage=vb")
    client.post(f"/runs/{run_id}/rerun", data={"csrf": token, "stage": "vb"})
    refused = client.post(f"/runs/{run_id}/rerun", data={"csrf": token, "stage": "vc"})
    assert refused.status_code == 409 and "is running, not done" in refused.text
    assert client.get(f"/runs/{run_id}/rerun?stage=vb&tenant=globex").status_code in (403, 404)
    missing = client.post("/runs/999999/rerun", data={"csrf": token, "stage": "vb"})
    assert missing.status_code == 409 and "there is no run 999999" in missing.text
    no_token = client.post(f"/runs/{run_id}/rerun", data={"stage": "vb"})
    assert no_token.status_code == 403


def test_the_diff_and_rerun_pages_refuse_bad_input_with_why(
    client: TestClient,  # noqa: F811
    conn: Conn,
    db_url: str,
) -> None:
    run_id = finished_chain(db_url, conn)
    no_stage = client.get(f"/runs/{run_id}/diff")
    assert no_stage.status_code == 400 and "stage=" in no_stage.text
    one_side = client.get(f"/runs/{run_id}/diff?stage=vb&left=1")
    assert one_side.status_code == 400 and "left= and right=" in one_side.text
    unknown = client.get(f"/runs/{run_id}/diff?stage=vb&left=1&right=generation:7")
    assert unknown.status_code == 404 and "no output version" in unknown.text
    assert client.get(f"/runs/{run_id}/rerun").status_code == 400
    assert client.get("/runs/999999/rerun?stage=vb").status_code == 404
    assert client.get("/runs/abc/diff?stage=vb").status_code == 400
