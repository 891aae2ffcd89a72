"""`pipeline submit`: store PDFs, start their pipelines, and optionally wait for the fields."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import psycopg

from pipeline import database_url, enqueue_once
from pipeline.cli import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CliError, open_db
from pipeline.paths import data_dir
from pipeline.runs import StageProgress, live_workers, run_output, run_progress
from stages.documents import MAX_PAGES, Upload, blob_store, worker_count
from stages.errors import DocumentError
from stages.pdfinfo import inspect_pdf
from stages.tender import TenderFields

STAGE_ORDER = ("upload", "ocr", "extract")
POLL_S = 0.2  #: how often --wait looks at the run


def add_commands(sub: Any) -> None:
    p = sub.add_parser(
        "submit",
        help="submit PDFs to the document pipeline",
        description="Store each PDF, start its upload -> OCR -> extract "
        "pipeline, and with --wait print the extracted fields as JSON.",
    )
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--tenant", help="tenant the documents belong to (dedup is per tenant)")
    p.add_argument(
        "--wait",
        action="store_true",
        help="wait for the fields; starts local workers when none is running",
    )
    p.add_argument("--timeout", type=float, default=1800, help="seconds --wait waits at most")
    p.add_argument(
        "--workers",
        type=int,
        default=0,
        help="threads of the local worker --wait starts (default: one per core)",
    )
    p.set_defaults(handler=cmd_submit)


def submit_one(conn: psycopg.Connection[Any], path: Path, tenant: str | None) -> tuple[int, bool]:
    """Validate, store and enqueue one file. Returns (document id, whether it is new)."""
    if not path.is_file():
        raise DocumentError(f"{path}: no such file")
    info = inspect_pdf(path, max_pages=MAX_PAGES)
    with path.open("rb") as stream:
        key = blob_store().put_file(stream)
    payload = Upload(
        blob_key=key, sha256=info.sha256, filename=path.name, size_bytes=info.size_bytes
    )
    return enqueue_once(
        conn, "upload", payload, tenant_id=tenant, dedup_key=f"{tenant or '-'}:{info.sha256}"
    )


def bar(done: int, total: int, width: int = 20) -> str:
    filled = width * done // total if total else 0
    return "[" + "#" * filled + "." * (width - filled) + "]"


def describe_progress(progress: list[StageProgress]) -> str:
    by_stage = {p.stage: p for p in progress}
    parts = []
    for name in STAGE_ORDER:
        p = by_stage.get(name)
        if p is None:
            parts.append(f"{name} -")
        elif name == "ocr":
            done = p.counts.get("done", 0)
            parts.append(f"ocr {bar(done, p.total)} {done}/{p.total} pages")
        elif p.counts.get("done"):
            parts.append(f"{name} done")
        elif p.failed:
            parts.append(f"{name} FAILED")
        else:
            parts.append(f"{name} {'running' if p.counts.get('running') else 'queued'}")
    return " | ".join(parts)


def start_local_worker(threads: int) -> tuple[subprocess.Popen[bytes], Path, TextIO]:
    logs = data_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"submit-worker-{os.getpid()}.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipeline.cli",
            "worker",
            "--concurrency",
            str(threads),
            "--stage",
            "upload",
            "--stage",
            "ocr",
            "--stage",
            "extract",
            "--grace",
            "5",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "DATABASE_URL": database_url()},
    )
    return proc, log_path, log


def wait_for_fields(
    conn: psycopg.Connection[Any], documents: list[tuple[Path, int]], timeout: float
) -> int:
    deadline = time.monotonic() + timeout
    pending = dict((doc, path) for path, doc in documents)
    results: dict[int, Any] = {}
    failures: dict[int, str] = {}
    tty = sys.stderr.isatty()
    shown: dict[int, str] = {}
    while pending and time.monotonic() < deadline:
        for doc, path in list(pending.items()):
            progress = run_progress(conn, doc)
            extracted = any(p.stage == "extract" and p.counts.get("done") for p in progress)
            fields = run_output(conn, doc, "extract") if extracted else None
            line = f"{path.name} (document {doc}): {describe_progress(progress)}"
            if line != shown.get(doc):
                print(
                    ("\r" if tty else "") + line + ("" if tty else "\n"),
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
                shown[doc] = line
            if fields is not None:
                # jsonb keeps keys in its own order; print them in the model's.
                results[doc] = TenderFields.model_validate(fields).model_dump(mode="json")
                del pending[doc]
            elif progress and all(p.finished == p.total for p in progress):
                errors = [f"{p.stage}: {p.error}" for p in progress if p.failed and p.error]
                failures[doc] = "; ".join(errors) or "the pipeline stopped without a result"
                del pending[doc]
        if pending:
            time.sleep(POLL_S)
    if tty:
        print(file=sys.stderr)
    for path, doc in documents:
        if doc in results:
            print(
                json.dumps({"document": doc, "file": str(path), "fields": results[doc]}, indent=2)
            )
        elif doc in failures:
            print(f"pipeline: {path}: document {doc} failed: {failures[doc]}", file=sys.stderr)
        else:
            print(
                f"pipeline: {path}: document {doc} still running after {timeout:g} s; "
                f"follow it with `pipeline jobs list`",
                file=sys.stderr,
            )
    return EXIT_OK if len(results) == len(documents) else EXIT_FAILURE


def cmd_submit(args: argparse.Namespace) -> int:
    _, conn = open_db()
    documents: list[tuple[Path, int]] = []
    with conn:
        for path in args.files:
            try:
                document, new = submit_one(conn, path, args.tenant)
            except DocumentError as exc:
                raise CliError(f"{path}: {exc}", EXIT_USAGE) from exc
            print(
                f"{path}: {'submitted as' if new else 'already submitted:'} document {document}",
                file=sys.stderr,
            )
            documents.append((path, document))
        if not args.wait:
            return EXIT_OK
        worker = None
        if live_workers(conn, "ocr") == 0:
            threads = args.workers or worker_count()
            worker = start_local_worker(threads)
            print(
                f"no worker is running: started one with {threads} thread(s) (log: {worker[1]})",
                file=sys.stderr,
            )
        try:
            return wait_for_fields(conn, documents, args.timeout)
        finally:
            if worker is not None:
                proc, _, log = worker
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
                log.close()
