"""The document pipeline through the real CLI: real tesseract, PostgreSQL and moto's S3 server."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pg_pipeline_documents.tender import TenderFields
from tests.acceptance.cli import REPO, WorkerProcess, pipeline_exe, run_cli
from tests.support.pdfs import FRENCH_NOTICE, encrypted_pdf, pageless_pdf, scanned_pdf
from tests.support.s3_server import s3_client
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
SAMPLES = REPO / "sample_docs"
FIELDS = list(TenderFields.model_fields)


def ground_truth(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SAMPLES / "ground_truth" / f"{name}.json").read_text())
    return data


def printed_results(stdout: str) -> dict[str, dict[str, Any]]:
    """`submit --wait` prints one JSON object per document."""
    decoder, results, at = json.JSONDecoder(), {}, 0
    text = stdout.strip()
    while at < len(text):
        obj, end = decoder.raw_decode(text, at)
        results[Path(obj["file"]).stem] = obj
        at = end
        while at < len(text) and text[at].isspace():
            at += 1
    return results


def correct_fields(got: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    a, b = TenderFields.model_validate(got), TenderFields.model_validate(expected)
    return [f for f in FIELDS if getattr(a, f) == getattr(b, f)]


def count(conn: Conn, sql: str, *params: Any) -> int:
    row = conn.execute(sql, params or None).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return int(row[0])


def test_every_sample_runs_end_to_end_over_s3(
    env: dict[str, str], conn: Conn, s3_bucket: str, moto_s3_endpoint: str
) -> None:
    import os

    s3_env = {
        **env,
        **{k: v for k, v in os.environ.items() if k.startswith("AWS_")},
        "PIPELINE_BLOB_URL": f"s3://{s3_bucket}/docs",
        "PIPELINE_S3_ENDPOINT_URL": moto_s3_endpoint,
    }
    samples = sorted(p.name for p in SAMPLES.glob("*.pdf"))
    result = run_cli(
        s3_env,
        "submit",
        *[str(SAMPLES / s) for s in samples],
        "--tenant",
        "acme",
        "--wait",
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    printed = printed_results(result.stdout)
    assert sorted(printed) == sorted(Path(s).stem for s in samples)
    scores = {}
    for name, obj in printed.items():
        truth = ground_truth(name)
        scores[name] = correct_fields(obj["fields"], truth["fields"])
        pages = count(
            conn,
            "SELECT count(*) FROM pipeline.outputs WHERE root_id = %s AND stage = 'ocr'",
            obj["document"],
        )
        assert pages == len(truth["pages"])
        # Every page that has words says where they stand, for the extractor.
        placed = count(
            conn,
            "SELECT count(*) FROM pipeline.outputs WHERE root_id = %s AND stage = 'ocr'"
            " AND (output->>'text' = '' OR jsonb_array_length(output->'layout'->'spans') > 0)",
            obj["document"],
        )
        assert placed == pages
    assert scores["tender"] == FIELDS and scores["mixed"] == FIELDS
    assert all(len(s) >= 8 for s in scores.values()), scores
    keys = [
        o["Key"]
        for o in s3_client(moto_s3_endpoint).list_objects_v2(Bucket=s3_bucket).get("Contents", [])
    ]
    assert len(keys) == len(samples) and all(k.startswith("docs/sha256/") for k in keys)
    assert count(conn, "SELECT count(*) FROM pipeline.jobs WHERE status <> 'done'") == 0


def test_a_scanned_french_document_is_read_in_french(
    env: dict[str, str], conn: Conn, tmp_path: Path
) -> None:
    pdf = scanned_pdf(tmp_path / "avis.pdf", FRENCH_NOTICE)

    result = run_cli(env, "submit", str(pdf), "--wait", timeout=600)

    assert result.returncode == 0, result.stderr
    [document] = printed_results(result.stdout).values()
    row = conn.execute(
        "SELECT output->>'lang' FROM pipeline.outputs WHERE root_id = %s AND stage = 'upload'",
        (document["document"],),
    ).fetchone()
    assert row == ("fra",)
    page = conn.execute(
        "SELECT output->>'text' FROM pipeline.outputs WHERE root_id = %s AND stage = 'ocr'",
        (document["document"],),
    ).fetchone()
    assert page is not None and "2027 à 12 heures" in page[0]


def test_a_worker_killed_mid_document_costs_one_page_and_no_duplicates(
    env: dict[str, str], conn: Conn, start_worker: Callable[..., WorkerProcess]
) -> None:
    submitted = run_cli(env, "submit", str(SAMPLES / "scanned_1bit_300dpi.pdf"))
    assert submitted.returncode == 0, submitted.stderr
    doc = count(conn, "SELECT id FROM pipeline.jobs WHERE type = 'upload'")
    first = start_worker(
        "--app", "documents", "--stage", "upload", "--stage", "ocr", "--stage", "extract",
        "--concurrency", "1",
    )  # fmt: skip
    wait_for(
        lambda: (
            count(conn, "SELECT count(*) FROM pipeline.outputs WHERE stage = 'ocr'") >= 1
            and count(
                conn, "SELECT count(*) FROM pipeline.jobs WHERE type = 'ocr' AND status = 'running'"
            )
            == 1
        ),
        timeout=120,
        what="a page mid-OCR",
    )
    first.signal(signal.SIGKILL)
    assert first.wait() == -signal.SIGKILL
    killed = count(conn, "SELECT id FROM pipeline.jobs WHERE type = 'ocr' AND status = 'running'")
    # The dead worker's lease would run out within a minute; let it be over now.
    conn.execute("UPDATE pipeline.active_jobs SET leased_until = now() WHERE status = 'running'")
    start_worker("--app", "documents", "--stage", "upload", "--stage", "ocr", "--stage", "extract")
    wait_for(
        lambda: count(conn, "SELECT count(*) FROM pipeline.outputs WHERE stage = 'extract'"),
        timeout=180,
        what="the extraction",
    )
    assert count(conn, "SELECT count(*) FROM pipeline.outputs WHERE stage = 'ocr'") == 3
    assert count(conn, "SELECT count(*) FROM pipeline.jobs WHERE type = 'extract'") == 1
    # The killed page ran twice, but the crash was the worker's death, not the page's fault.
    assert count(conn, "SELECT claims FROM pipeline.jobs WHERE id = %s", killed) == 2
    assert count(conn, "SELECT max(attempts) FROM pipeline.jobs") == 1
    assert (
        count(
            conn,
            "SELECT count(*) FROM pipeline.jobs WHERE coalesce(root_id, id) = %s AND status <> "
            "'done'",
            doc,
        )
        == 0
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_bytes(b""), "file is empty"),
        (lambda p: p.write_bytes(b"PK\x03\x04 not a pdf at all"), "not a PDF"),
        (
            lambda p: p.write_bytes((SAMPLES / "tender.pdf").read_bytes()[:2000]),
            "damaged or truncated",
        ),
        (encrypted_pdf, "encrypted"),
        (pageless_pdf, "no pages"),
        (lambda p: None, "no such file"),
    ],
    ids=["empty", "not-pdf", "truncated", "encrypted", "no-pages", "missing"],
)
def test_bad_files_are_refused_at_submit_and_nothing_is_enqueued(
    env: dict[str, str], conn: Conn, tmp_path: Path, make: Callable[[Path], Any], message: str
) -> None:
    bad = tmp_path / "bad.pdf"
    make(bad)
    result = run_cli(env, "submit", str(bad), "--wait")
    assert result.returncode == 2
    assert message in result.stderr and str(bad) in result.stderr
    assert count(conn, "SELECT count(*) FROM pipeline.jobs") == 0


def test_the_same_document_submitted_twice_at_once_is_one_document(
    env: dict[str, str], conn: Conn
) -> None:
    procs = [
        subprocess.Popen(
            [*pipeline_exe(), "submit", str(SAMPLES / "tender.pdf"), "--tenant", "acme"],
            env=env,
            cwd=REPO,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    doc = count(conn, "SELECT id FROM pipeline.jobs WHERE type = 'upload'")
    assert all(f"document {doc}" in err for _, err in outputs)
    assert sum("already submitted" in err for _, err in outputs) == 1
    other_tenant = run_cli(env, "submit", str(SAMPLES / "tender.pdf"), "--tenant", "globex")
    assert other_tenant.returncode == 0
    assert count(conn, "SELECT count(*) FROM pipeline.jobs WHERE type = 'upload'") == 2


def failed_upload(conn: Conn) -> tuple[int, str]:
    """The upload's attempts and error, once it failed for good."""
    wait_for(
        lambda: count(conn, "SELECT count(*) FROM pipeline.jobs WHERE status = 'failed'"),
        what="the upload to fail",
    )
    row = conn.execute(
        "SELECT attempts, last_error FROM pipeline.jobs WHERE type = 'upload'"
    ).fetchone()
    assert row is not None
    return int(row[0]), str(row[1])


def test_a_document_whose_file_vanished_fails_with_the_reason(
    env: dict[str, str], conn: Conn, tmp_path: Path, start_worker: Callable[..., WorkerProcess]
) -> None:
    assert run_cli(env, "submit", str(SAMPLES / "tender.pdf")).returncode == 0
    blobs = [b for b in (tmp_path / "home" / "blobs").rglob("*") if b.is_file()]
    assert len(blobs) == 1
    blobs[0].unlink()
    start_worker("--app", "documents", "--stage", "upload")
    error = failed_upload(conn)
    assert error[0] == 1 and "gone from blob storage" in error[1]
    # Waiting on the failed document reports why instead of hanging.
    result = run_cli(env, "submit", str(SAMPLES / "tender.pdf"), "--wait", timeout=120)
    assert result.returncode == 1
    assert "failed: upload: DocumentError" in result.stderr
    assert "gone from blob storage" in result.stderr


def test_doctor_finds_everything_the_pipeline_needs(env: dict[str, str]) -> None:
    result = run_cli(env, "doctor")
    assert result.returncode == 0, result.stdout
    for name in ("postgres", "schema", "listen/notify", "blob store", "tesseract", "langs"):
        assert any(line.startswith("ok") and name in line for line in result.stdout.splitlines())
    # The test command installs French and German data beside English: the doctor lists them.
    assert any(
        line.startswith("ok") and "tesseract langs" in line and "deu, eng, fra" in line
        for line in result.stdout.splitlines()
    ), result.stdout
    # This machine has libtesseract (the OCR tests read pages through it): the doctor says so.
    assert any(
        line.startswith("ok") and "tesseract lib" in line and "in-process" in line
        for line in result.stdout.splitlines()
    ), result.stdout


def test_a_worker_reading_another_blob_store_fails_the_document_at_once_naming_both(
    env: dict[str, str], conn: Conn, tmp_path: Path, start_worker: Callable[..., WorkerProcess]
) -> None:
    submitter, reader = tmp_path / "submitter-blobs", tmp_path / "worker-blobs"
    submitted = run_cli(
        {**env, "PIPELINE_BLOB_URL": str(submitter)}, "submit", str(SAMPLES / "tender.pdf")
    )
    assert submitted.returncode == 0, submitted.stderr
    start_worker(
        "--app", "documents", "--stage", "upload", environ={**env, "PIPELINE_BLOB_URL": str(reader)}
    )
    error = failed_upload(conn)
    assert error[0] == 1, error
    assert f"stored in {submitter.as_uri()}" in error[1]
    assert f"reads the blob store {reader.as_uri()}" in error[1]
    assert "gone" not in error[1]


def test_submit_names_the_document_stages_no_running_worker_has(
    env: dict[str, str], conn: Conn, start_worker: Callable[..., WorkerProcess]
) -> None:
    tender = str(SAMPLES / "tender.pdf")
    # A worker of another app (jobs_app, from PIPELINE_APP) runs none of the document stages.
    other = start_worker("--stage", "effect")
    wait_for(lambda: count(conn, "SELECT count(*) FROM pipeline.workers"), what="the worker")
    alone = run_cli(env, "submit", tender, "--tenant", "a")
    assert alone.returncode == 0, alone.stderr
    assert "no running worker has the documents app's stages upload, ocr, extract" in alone.stderr
    assert "pipeline worker --app documents" in alone.stderr
    other.signal(signal.SIGTERM)
    assert other.wait() == 0
    start_worker("--app", "documents", "--stage", "ocr", "--stage", "extract")
    wait_for(
        lambda: count(conn, "SELECT count(*) FROM pipeline.workers WHERE 'ocr' = ANY(stages)"),
        what="the documents worker",
    )
    partly = run_cli(env, "submit", tender, "--tenant", "b")
    assert partly.returncode == 0, partly.stderr
    assert "no running worker has the documents app's stages upload:" in partly.stderr
