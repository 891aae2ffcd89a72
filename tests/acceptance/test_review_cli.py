"""Review of uncertain fields through the real CLI: `pipeline submit --review --wait` says a
document waits for review, an answer resumes it on a worker, `submit --wait` prints the reviewed
fields, and `pipeline documents labels` lists the correction."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import psycopg

import pg_pipeline
from pg_pipeline.admin.waits import list_waits
from tests.acceptance.cli import REPO, WorkerProcess, run_cli
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
TENDER = REPO / "sample_docs" / "tender.pdf"


def test_a_document_waits_for_review_and_prints_its_reviewed_fields_once_answered(
    env: dict[str, str], conn: Conn, start_worker: Callable[..., WorkerProcess]
) -> None:
    review_env = {
        **env,
        "PIPELINE_APP": "",
        "PIPELINE_REVIEW_THRESHOLD": "0.82",
        "PIPELINE_DASHBOARD_URL": "http://review.example:9000",
    }

    first = run_cli(review_env, "submit", str(TENDER), "--review", "--wait", timeout=300)

    assert first.returncode == 3, first.stderr
    assert first.stdout == ""
    assert "waits for a person to review" in first.stderr
    assert "http://review.example:9000/review" in first.stderr
    [task] = list_waits(conn)
    answer = dict(task.proposal) | {"reference": "WB-PW-2027-015"}
    with conn.transaction():
        pg_pipeline.signal(conn, task.run_id, "review", answer)
    worker = start_worker("--app", "documents", environ=review_env)
    state = wait_for(
        lambda: (s := pg_pipeline.run_status(conn, task.run_id)) and s.ended and s,
        timeout=120,
        what="the reviewed run to end",
    )
    assert state.status == "done", worker.log()

    again = run_cli(review_env, "submit", str(TENDER), "--review", "--wait", timeout=120)

    assert again.returncode == 0, again.stderr
    printed = json.loads(again.stdout)
    assert printed["document"] == task.run_id
    assert printed["fields"]["reference"] == "WB-PW-2027-015"
    assert printed["review"]["status"] == "corrected"
    labels = run_cli(review_env, "documents", "labels", "--json")
    assert labels.returncode == 0, labels.stderr
    [label] = [json.loads(line) for line in labels.stdout.splitlines()]
    assert label["document"] == task.run_id and label["file"] == "tender.pdf"
    assert (label["field"], label["extracted"], label["corrected"]) == (
        "reference",
        "WB-PW-2027-014",
        "WB-PW-2027-015",
    )
    table = run_cli(review_env, "documents", "labels")
    assert "reference\tWB-PW-2027-014\tWB-PW-2027-015\t0.85" in table.stdout


def test_submit_without_review_never_waits_for_a_person(env: dict[str, str]) -> None:
    # Even with the workers told to review everything: `submit` without --review says no.
    everything = {"PIPELINE_REVIEW": "on", "PIPELINE_REVIEW_THRESHOLD": "1"}
    review_env = {**env, "PIPELINE_APP": "", **everything}

    done = run_cli(review_env, "submit", str(TENDER), "--wait", timeout=300)

    assert done.returncode == 0, done.stderr
    assert "review" not in json.loads(done.stdout)
    none = run_cli(review_env, "documents", "labels")
    assert none.returncode == 0 and "no labels" in none.stdout


def test_a_misspelt_review_setting_stops_the_worker_at_start(env: dict[str, str]) -> None:
    bad = {**env, "PIPELINE_APP": "", "PIPELINE_REVIEW_REQUIRED": "deadline"}

    result = run_cli(bad, "worker", "--app", "documents", timeout=60)

    assert result.returncode != 0
    assert "PIPELINE_REVIEW_REQUIRED" in result.stderr and "submission_deadline" in result.stderr


def test_submit_refuses_a_review_setting_that_cannot_be_right(env: dict[str, str]) -> None:
    bad = {**env, "PIPELINE_APP": "", "PIPELINE_REVIEW_THRESHOLD": "high"}

    result = run_cli(bad, "submit", str(TENDER), "--review")

    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "pipeline: PIPELINE_REVIEW_THRESHOLD must be a confidence from 0 to 1, not 'high'"
    ]
