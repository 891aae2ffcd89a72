"""Review of uncertain fields, end to end on the sample documents: the document's run waits for a
person when a field is uncertain or a required one is missing, and goes on with the answer (the
stages run in the test's thread by pg_pipeline.testing.drain, on a real PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import pg_pipeline
import pg_pipeline_documents.cli as cli
from pg_pipeline.admin.waits import list_waits
from pg_pipeline.maintenance.waits import WaitTimeouts
from pg_pipeline.runs import run_output, run_status
from pg_pipeline.testing import drain
from pg_pipeline_documents import documents
from pg_pipeline_documents.labels import read_labels
from pg_pipeline_documents.review import Reviewed
from pg_pipeline_documents.tender import TenderFields

Conn = psycopg.Connection[Any]
REPO = Path(__file__).resolve().parents[3]
TENDER = REPO / "sample_docs" / "tender.pdf"  # every field read; reference at 0.85, lots 0.8
NO_LOTS = REPO / "sample_docs" / "corpus" / "de_2.pdf"  # a notice without lots
APP = "pg_pipeline_documents.documents"


@pytest.fixture(autouse=True)
def blobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A blob store of the test's own, and review settings from a clean environment."""
    monkeypatch.setenv("PIPELINE_BLOB_URL", str(tmp_path / "blobs"))
    monkeypatch.setattr(documents, "_store", None)
    for name in ("", "_THRESHOLD", "_THRESHOLDS", "_REQUIRED", "_TIMEOUT"):
        monkeypatch.delenv(f"PIPELINE_REVIEW{name}", raising=False)
    yield


def submit(conn: Conn, path: Path, *, review: bool, tenant: str | None = None) -> int:
    doc, new = cli.submit_one(conn, path, tenant, review=review)
    assert new
    drain(conn, app=APP, run_id=doc)
    return doc


def stages_of(conn: Conn, doc: int) -> set[str]:
    return {p.stage for p in pg_pipeline.run_progress(conn, doc)}


def reviewed(conn: Conn, doc: int) -> Reviewed:
    out = run_output(conn, doc, "review")
    assert out is not None
    return Reviewed.model_validate(out)


def test_a_low_confidence_field_puts_the_run_in_waiting_with_a_review_task(
    conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_REVIEW_THRESHOLD", "0.82")  # below it: lots, contact_email

    doc = submit(conn, TENDER, review=True, tenant="acme")

    state = run_status(conn, doc)
    assert state is not None and state.status == "waiting"
    [task] = list_waits(conn, tenant="acme")
    assert (task.run_id, task.name, task.stage) == (doc, "review", "review")
    assert task.detail["flagged"] == ["lots", "contact_email"]
    email = task.detail["fields"]["contact_email"]
    assert email["needs_review"] is True and email["confidence"] == 0.8
    assert "procurement@westbrook-city.example" in email["snippet"]
    assert email["image"].startswith("data:image/png;base64,")
    assert task.detail["fields"]["title"]["needs_review"] is False
    assert TenderFields.model_validate(task.proposal).reference == "WB-PW-2027-014"
    assert list_waits(conn, tenant="zeta") == []


def test_a_correction_completes_the_run_with_the_reviewed_fields_and_a_label(
    conn: Conn, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PIPELINE_REVIEW_THRESHOLD", "0.82")
    doc = submit(conn, TENDER, review=True)
    [task] = list_waits(conn)
    answer = dict(task.proposal) | {"contact_email": "tenders@westbrook-city.example"}

    with conn.transaction():
        pg_pipeline.signal(conn, doc, "review", answer)
    drain(conn, app=APP, run_id=doc)

    state = run_status(conn, doc)
    assert state is not None and state.status == "done"
    result = reviewed(conn, doc)
    assert result.status == "corrected"
    assert result.fields.contact_email == "tenders@westbrook-city.example"
    assert result.fields.reference == "WB-PW-2027-014"  # accepted as it was
    assert list(result.flagged) == ["lots", "contact_email"]
    [label] = result.labels
    assert (label.field, label.extracted, label.corrected) == (
        "contact_email",
        "procurement@westbrook-city.example",
        "tenders@westbrook-city.example",
    )
    assert label.confidence == 0.8 and "procurement@" in (label.evidence or "")
    [stored] = read_labels(conn)
    assert stored.document == doc and stored.label == label and stored.filename == "tender.pdf"
    # `submit --wait` prints the reviewed fields.
    assert cli.wait_for_fields(conn, [(TENDER, doc)], timeout=10) == pg_pipeline.EXIT_OK
    out = capsys.readouterr().out
    assert '"contact_email": "tenders@westbrook-city.example"' in out
    assert '"status": "corrected"' in out


def test_a_sure_document_does_not_wait(conn: Conn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_REVIEW_THRESHOLD", "0.5")

    doc = submit(conn, TENDER, review=True)

    state = run_status(conn, doc)
    assert state is not None and state.status == "done"
    result = reviewed(conn, doc)
    assert result.status == "sure" and result.flagged == {} and result.labels == []
    assert list_waits(conn) == []


def test_a_missing_required_field_triggers_review(
    conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_REVIEW_THRESHOLD", "0")
    monkeypatch.setenv("PIPELINE_REVIEW_REQUIRED", "lots,title")

    doc = submit(conn, NO_LOTS, review=True)

    [task] = list_waits(conn)
    assert task.run_id == doc and task.detail["flagged"] == ["lots"]
    assert task.detail["fields"]["lots"]["why"] == "required, and no value was read"


def test_review_is_off_for_submit_unless_asked_even_when_the_workers_review(
    conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_REVIEW_THRESHOLD", "1")  # every field would be asked about

    plain = submit(conn, TENDER, review=False)
    assert "review" not in stages_of(conn, plain)
    state = run_status(conn, plain)
    assert state is not None and state.status == "done"

    monkeypatch.setenv("PIPELINE_REVIEW", "on")
    other = submit(conn, NO_LOTS, review=False)  # what `pipeline submit` without --review sends
    assert "review" not in stages_of(conn, other) and list_waits(conn) == []


def test_the_workers_setting_reviews_a_document_enqueued_without_saying(
    conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_REVIEW", "on")
    monkeypatch.setenv("PIPELINE_REVIEW_THRESHOLD", "0.82")
    doc, _ = cli.submit_one(conn, TENDER, None)
    # As an application enqueues it: the `upload` payload without `review`.
    conn.execute(
        "UPDATE pipeline.active_jobs SET payload = payload - 'review' WHERE id = %s", (doc,)
    )
    drain(conn, app=APP, run_id=doc)

    [task] = list_waits(conn)
    assert task.run_id == doc


def test_submit_wait_says_a_document_waits_for_review(
    conn: Conn, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PIPELINE_REVIEW_THRESHOLD", "0.82")
    monkeypatch.setenv("PIPELINE_DASHBOARD_URL", "https://review.example/queue/")
    doc = submit(conn, TENDER, review=True, tenant="acme")

    code = cli.wait_for_fields(conn, [(TENDER, doc)], timeout=30, tenant="acme")

    assert code == cli.EXIT_WAITING
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"document {doc} (run {doc}) waits for a person to review" in captured.err
    assert "https://review.example/queue/review?tenant=acme" in captured.err


def test_no_answer_in_time_keeps_the_extracted_fields_unreviewed(
    conn: Conn, pool: ConnectionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_REVIEW_THRESHOLD", "0.82")
    doc = submit(conn, TENDER, review=True)
    [task] = list_waits(conn)
    conn.execute("UPDATE pipeline.waits SET deadline = now() WHERE job_id = %s", (task.job_id,))

    assert WaitTimeouts(pool).run_once() == [(task.job_id, "review", "review")]
    drain(conn, app=APP, run_id=doc)

    state = run_status(conn, doc)
    assert state is not None and state.status == "done"
    result = reviewed(conn, doc)
    assert result.status == "timed_out" and result.labels == []
    assert result.fields.contact_email == "procurement@westbrook-city.example"
    assert list(result.flagged) == ["lots", "contact_email"]


def test_the_accuracy_benchmark_scores_the_extractor_against_the_reviewed_documents(
    conn: Conn, db_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.extraction_accuracy import (
        extract_pages,
        main,
        reviewed_documents,
        score_reviewed,
    )

    monkeypatch.setenv("PIPELINE_REVIEW_THRESHOLD", "0.82")
    doc = submit(conn, TENDER, review=True)
    [task] = list_waits(conn)
    answer = dict(task.proposal) | {"contact_email": "tenders@westbrook-city.example"}
    with conn.transaction():
        pg_pipeline.signal(conn, doc, "review", answer)
    drain(conn, app=APP, run_id=doc)
    sure = submit(conn, NO_LOTS, review=False)  # never reviewed: nothing to learn from it

    [reviewed_doc] = reviewed_documents(conn)

    assert reviewed_doc.document == doc and sure != doc
    assert reviewed_doc.corrected == {"contact_email"} and len(reviewed_doc.pages) == 2
    verdicts = {v.field: v for v in score_reviewed([reviewed_doc], extract_pages)}
    # Today's extractor still reads the address the reviewer corrected; the rest was accepted.
    assert verdicts["contact_email"].labelled and verdicts["contact_email"].outcome == "wrong"
    assert all(v.outcome == "right" for f, v in verdicts.items() if f != "contact_email")
    assert reviewed_documents(conn, tenant="acme") == []
    monkeypatch.setenv("DATABASE_URL", db_url)
    main(["--labels-from-db"])
    report = capsys.readouterr().out
    assert "1 reviewed document(s), 1 label(s)" in report
    assert "| contact_email | 0/1 (0%) / 1/1 (100%) / 0/1 (0%) |" in report
