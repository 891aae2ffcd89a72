"""`pipeline submit`: store PDFs, start their pipelines, and optionally wait for the fields."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlencode

import psycopg

from pg_pipeline import (
    RetryableError,
    StageProgress,
    data_dir,
    database_url,
    enqueue_once,
    inputs,
    live_workers,
    require_extra,
    run_output,
    run_progress,
    run_status,
)
from pg_pipeline.commands.api import (
    APP_ENV,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    Subcommands,
    add_command,
    integer_arg,
    open_db,
    printable,
    printable_json,
    seconds_arg,
    tenant_arg,
)
from pg_pipeline_documents import labels
from pg_pipeline_documents.errors import DocumentError
from pg_pipeline_documents.pdfinfo import inspect_pdf
from pg_pipeline_documents.review import Reviewed, review_enabled, review_settings
from pg_pipeline_documents.tender import TenderExtraction

STAGE_ORDER = ("upload", "ocr", "extract", "review")
#: The name this package's app has in the `pg_pipeline.apps` entry point group (pyproject.toml):
#: what `pipeline worker --app` takes to run the stages above.
APP = "documents"
EXTRA = "documents"  #: the extra that installs what the document stages import
POLL_S = 0.2  #: how often --wait looks at the run
MAX_WORKER_THREADS = 1024  #: WorkerSettings.concurrency's limit; 0: one thread per core
LOG_TAIL_LINES = 20  #: lines of a dead worker's log that --wait shows
#: Where reviewers answer: the dashboard's address, for the message of a document that waits.
DASHBOARD_URL_ENV = "PIPELINE_DASHBOARD_URL"
DASHBOARD_URL = "http://127.0.0.1:8080"  #: `pipeline dashboard` on its defaults
#: `submit --wait`'s exit code when every document has its fields or waits for review, and
#: some wait: not a failure, not done.
EXIT_WAITING = 3


def shown_path(path: str | Path) -> str:
    """A path as its bytes read, printable even when they are not UTF-8 (`\\xff.pdf`) or hold
    control characters (`\\x1b]0;...`)."""
    return printable(os.fsencode(path).decode("utf-8", "backslashreplace"))


def add_commands(sub: Subcommands) -> None:
    labels.add_commands(sub)
    p = add_command(
        sub,
        "submit",
        run,
        "submit PDFs to the document pipeline",
        "Store each PDF, start its upload -> OCR -> extract "
        "pipeline, and with --wait print the extracted fields as JSON. With --review, a "
        "document with an uncertain or missing required field waits for a person, who "
        "answers on the dashboard's Review page (`pipeline dashboard`).",
    )
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument(
        "--tenant", type=tenant_arg, help="tenant the documents belong to (dedup is per tenant)"
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="wait for the fields; starts local workers when none is running",
    )
    p.add_argument(
        "--timeout",
        type=seconds_arg(above_zero=True),
        default=1800,
        help="seconds --wait waits at most",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="with --wait, also print each field's confidence and evidence, and the warnings",
    )
    p.add_argument(
        "--review",
        action="store_true",
        help="have a person review uncertain fields on the dashboard's Review page before "
        "the document is done (off by default; see PIPELINE_REVIEW_* for which fields)",
    )
    p.add_argument(
        "--workers",
        type=integer_arg(0, MAX_WORKER_THREADS),
        default=0,
        help="threads of the local worker --wait starts (default: one per core)",
    )


def dedup_key(tenant: str | None, sha256: str) -> str:
    """The key that makes a file one document per tenant: `<tenant>:<sha256>`, `-:<sha256>`
    without a tenant.

    Distinct tenants never share a key, or one would be handed the other's document: a tenant
    named `-` (which would read as "no tenant") or starting with a backslash gets a backslash
    in front. Every other key is what it always was, so files submitted before still dedup.
    """
    if tenant is None:
        return f"-:{sha256}"
    escaped = "\\" + tenant if tenant == "-" or tenant.startswith("\\") else tenant
    return f"{escaped}:{sha256}"


def submit_one(
    conn: psycopg.Connection[Any], path: Path, tenant: str | None, *, review: bool = False
) -> tuple[int, bool]:
    """Validate, store and enqueue one file. Returns (document id, whether it is new).
    `review`: a person reviews its uncertain fields (said explicitly, so that the workers'
    PIPELINE_REVIEW does not turn review on for a command run without a dashboard)."""
    # Here, not at the top: `pipeline` lists this command in an install without the documents
    # extra, whose modules the document stages import.
    from pg_pipeline_documents.documents import MAX_PAGES, Upload, blob_store

    try:
        if not path.is_file():
            raise DocumentError("no such file")
        # The name goes into the job's payload: checked now, or it would fail after the blob
        # is stored.
        try:
            inputs.text(path.name, "the file name")
        except ValueError:  # a path holds no NUL: its bytes are not UTF-8
            raise DocumentError("the file name is not valid UTF-8; rename the file") from None
        info = inspect_pdf(path, max_pages=MAX_PAGES)
    except OSError as exc:  # unreadable, a name too long: refused before anything is stored
        raise DocumentError(f"cannot read it: {exc.strerror or type(exc).__name__}") from exc
    store = blob_store()
    with path.open("rb") as stream:
        key = store.put_file(stream)
    payload = Upload(
        blob_key=key,
        blob_store_url=store.url,
        sha256=info.sha256,
        filename=path.name,
        size_bytes=info.size_bytes,
        review=review,
    )
    return enqueue_once(
        conn, "upload", payload, tenant_id=tenant, dedup_key=dedup_key(tenant, info.sha256)
    )


def bar(done: int, total: int, width: int = 20) -> str:
    filled = width * done // total if total else 0
    return "[" + "#" * filled + "." * (width - filled) + "]"


def describe_progress(progress: list[StageProgress]) -> str:
    by_stage = {p.stage: p for p in progress}
    parts = []
    for name in STAGE_ORDER:
        p = by_stage.get(name)
        if p is None and name == "review":
            continue  # review is off for the document, or its fields are not extracted yet
        if p is None:
            parts.append(f"{name} -")
        elif name == "ocr":
            done = p.counts.get("done", 0)
            parts.append(f"ocr {bar(done, p.total)} {done}/{p.total} pages")
        elif p.counts.get("waiting"):
            parts.append(f"{name} waiting for a person")
        elif p.counts.get("done"):
            parts.append(f"{name} done")
        elif p.failed:
            parts.append(f"{name} FAILED")
        else:
            parts.append(f"{name} {'running' if p.counts.get('running') else 'queued'}")
    return " | ".join(parts)


@dataclass
class LocalWorker:
    """The worker `submit --wait` started, and its log."""

    proc: subprocess.Popen[bytes]
    log_path: Path
    log: TextIO

    def ended(self) -> str | None:
        """How the worker ended ("exited with code 1", "was killed by SIGKILL"), or None."""
        code = self.proc.poll()
        if code is None:
            return None
        if code < 0:
            try:
                return f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"was killed by signal {-code}"
        return f"exited with code {code}"

    def last_lines(self, count: int = LOG_TAIL_LINES) -> list[str]:
        try:
            with self.log_path.open("rb") as stream:
                stream.seek(max(0, self.log_path.stat().st_size - 64 * 1024))
                return stream.read().decode("utf-8", "replace").splitlines()[-count:]
        except OSError:  # deleted meanwhile: the path is still worth printing
            return []

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def _private_log(path: Path) -> TextIO:
    """`path` opened for writing, readable by this user alone: a worker's log quotes documents."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)  # a log left by an earlier run of the same pid may be wider
    return os.fdopen(fd, "w")


def worker_count() -> int:
    """Local workers for `submit --wait`: one OCR at a time per core."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def unserved_stages(conn: psycopg.Connection[Any], *, review: bool = False) -> list[str]:
    """The document stages no live worker runs: a worker that was not given the documents app
    runs none of them, and one limited by --stage may run only some. `review` only when the
    documents are reviewed: without it, workers told the three first stages serve them."""
    wanted = STAGE_ORDER if review else tuple(n for n in STAGE_ORDER if n != "review")
    return [name for name in wanted if live_workers(conn, name) == 0]


def start_local_worker(threads: int) -> LocalWorker:
    logs = data_dir() / "logs"
    logs.mkdir(mode=0o700, parents=True, exist_ok=True)
    logs.chmod(0o700)  # made wider by an earlier version, perhaps
    log_path = logs / f"submit-worker-{os.getpid()}.log"
    log = _private_log(log_path)
    proc = subprocess.Popen(
        [
            # -P: `-m` would put the current directory first on sys.path, and a `stages/` or
            # `pipeline/` folder there (a user's project, a source checkout) would be imported
            # instead of the installed packages, and kill the worker as it starts.
            sys.executable,
            "-P",
            "-m",
            "pg_pipeline.cli",
            "worker",
            "--app",
            APP,
            "--concurrency",
            str(threads),
            "--stage",
            "upload",
            "--stage",
            "ocr",
            "--stage",
            "extract",
            "--stage",
            "review",
            "--grace",
            "5",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        # The documents app alone: not the apps PIPELINE_APP names for the user's own workers.
        env={**os.environ, "DATABASE_URL": database_url(), APP_ENV: ""},
    )
    return LocalWorker(proc, log_path, log)


#: A document's fields as extracted, and as reviewed when it was (None: review was off).
Result = tuple[TenderExtraction, Reviewed | None]


def document_result(
    conn: psycopg.Connection[Any], doc: int, progress: list[StageProgress]
) -> Result | None:
    """The document's fields once they are final: extracted without review, or reviewed."""
    by_stage = {p.stage: p for p in progress}
    extract, review = by_stage.get("extract"), by_stage.get("review")
    if extract is None or not extract.counts.get("done"):
        return None
    # `extract` enqueues `review` in the transaction that stores its output: seen done, its
    # review (when there is one) is seen too.
    if review is not None and not review.counts.get("done"):
        return None
    extracted = run_output(conn, doc, "extract")
    reviewed = run_output(conn, doc, "review") if review is not None else None
    if extracted is None or (review is not None and reviewed is None):
        return None
    # jsonb keeps keys in its own order; printed in the model's.
    return (
        TenderExtraction.model_validate(extracted),
        None if reviewed is None else Reviewed.model_validate(reviewed),
    )


def review_url(tenant: str | None) -> str:
    """The dashboard's Review page: PIPELINE_DASHBOARD_URL, else `pipeline dashboard`'s
    default address."""
    base = os.environ.get(DASHBOARD_URL_ENV, "").strip().rstrip("/") or DASHBOARD_URL
    return f"{base}/review" + (f"?{urlencode({'tenant': tenant})}" if tenant else "")


def wait_for_fields(
    conn: psycopg.Connection[Any],
    documents: list[tuple[Path, int]],
    timeout: float,
    worker: LocalWorker | None = None,
    *,
    explain: bool = False,
    tenant: str | None = None,
) -> int:
    """Show progress until every document has its fields, failed or waits for review,
    `timeout` passed, or `worker` (the one this command started) ended; print the results.
    Exit code EXIT_WAITING when the documents that have no fields yet all wait for review."""
    deadline = time.monotonic() + timeout
    worker_end: str | None = None
    pending = dict((doc, path) for path, doc in documents)
    results: dict[int, Result] = {}
    failures: dict[int, str] = {}
    waiting: list[int] = []
    tty = sys.stderr.isatty()
    shown: dict[int, str] = {}
    while pending and time.monotonic() < deadline:
        # Looked at before the documents, so that what it committed before it ended is seen.
        ended = None if worker is None else worker.ended()
        for doc, path in list(pending.items()):
            # Read before the outputs: a run that had ended by then has its fields seen below.
            state = run_status(conn, doc)
            progress = run_progress(conn, doc)
            found = document_result(conn, doc, progress)
            line = f"{shown_path(path.name)} (document {doc}): {describe_progress(progress)}"
            if line != shown.get(doc):
                print(
                    ("\r" if tty else "") + line + ("" if tty else "\n"),
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
                shown[doc] = line
            if found is not None:
                results[doc] = found
                del pending[doc]
            elif state is not None and state.status == "waiting":
                # A person's answer may take days: said now, not waited for.
                waiting.append(doc)
                del pending[doc]
            elif state is not None and state.ended:
                # Failed as soon as a job of it failed for good (pages may still be running:
                # the fields can no longer come), or cancelled, or done without fields.
                if state.blocked_job_id is not None:
                    failures[doc] = (
                        f"{state.blocked_stage}: {state.blocked_reason or state.status} "
                        f"(job {state.blocked_job_id})"
                    )
                else:
                    failures[doc] = "the pipeline stopped without a result"
                del pending[doc]
        if pending and ended is not None:
            worker_end = ended
            break
        if pending:
            time.sleep(POLL_S)
    if tty:
        print(file=sys.stderr)
    if worker is not None and worker_end is not None:
        tail = "".join(f"\n    {printable(line)}" for line in worker.last_lines())
        print(
            f"pipeline: the worker this command started {worker_end} "
            f"(log: {shown_path(worker.log_path)})"
            + (f"; its last lines:{tail}" if tail else "; its log is empty"),
            file=sys.stderr,
        )
    for path, doc in documents:
        if doc in results:
            extraction, reviewed = results[doc]
            fields = reviewed.fields if reviewed is not None else extraction.fields()
            printed: dict[str, Any] = {
                "document": doc,
                "file": str(path),
                "fields": fields.model_dump(mode="json"),
            }
            if reviewed is not None:
                printed["review"] = reviewed.model_dump(
                    mode="json", include={"status", "flagged", "labels"}
                )
            if explain:
                printed["explain"] = extraction.model_dump(
                    mode="json", include={"extractor", "evidence", "warnings"}
                )
            print(printable_json(printed, indent=2))
        elif doc in waiting:
            print(
                f"pipeline: {shown_path(path)}: document {doc} (run {doc}) waits for a person "
                "to review "
                f"its uncertain fields: answer on the dashboard's Review page, "
                f"{printable(review_url(tenant))} (served by `pipeline dashboard`); "
                f"a worker with the {APP} app then finishes it, and "
                f"`pipeline submit --wait` on the file prints its reviewed fields",
                file=sys.stderr,
            )
        elif doc in failures:
            print(
                f"pipeline: {shown_path(path)}: document {doc} failed: {printable(failures[doc])}",
                file=sys.stderr,
            )
        elif worker_end is not None:
            print(
                f"pipeline: {shown_path(path)}: document {doc} is unfinished, and no worker of "
                "this command is left to run it; start one with `pipeline worker`",
                file=sys.stderr,
            )
        else:
            print(
                f"pipeline: {shown_path(path)}: document {doc} still running after {timeout:g} s; "
                f"follow it with `pipeline jobs list`",
                file=sys.stderr,
            )
    if len(results) == len(documents):
        return EXIT_OK
    if len(results) + len(waiting) == len(documents):
        return EXIT_WAITING
    return EXIT_FAILURE


def run(args: argparse.Namespace) -> int:
    # Before anything is stored: the PDF checks run the documents extra's PDFium.
    require_extra(EXTRA, "pipeline submit")
    try:  # as the workers will read them: said now, before anything is stored
        review_enabled()
        review_settings()
    except RuntimeError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    _, conn = open_db()
    documents: list[tuple[Path, int]] = []
    with conn:
        for path in args.files:
            try:
                document, new = submit_one(conn, path, args.tenant, review=args.review)
            except DocumentError as exc:
                raise CliError(f"{shown_path(path)}: {exc}", EXIT_USAGE) from exc
            except RetryableError as exc:  # e.g. the PDF checker was killed from outside
                raise CliError(f"{shown_path(path)}: {exc}; try again", EXIT_FAILURE) from exc
            # The document is the one submitted before, reviewed or not as it was asked then.
            again = " (--review applies to documents new here)" if args.review and not new else ""
            print(
                f"{shown_path(path)}: {'submitted as' if new else 'already submitted:'} "
                f"document {document}{again}",
                file=sys.stderr,
            )
            documents.append((path, document))
        unserved = unserved_stages(conn, review=args.review)
        if args.review:
            print(
                "documents with uncertain fields will wait for review: answer on the "
                f"dashboard's Review page, {printable(review_url(args.tenant))} "
                "(`pipeline dashboard`)",
                file=sys.stderr,
            )
        if not args.wait:
            if unserved:
                print(
                    f"pipeline: no running worker has the {APP} app's stages "
                    f"{', '.join(unserved)}: the documents wait for one "
                    f"(`pipeline worker --app {APP}`), or pass --wait to start one here",
                    file=sys.stderr,
                )
            return EXIT_OK
        worker = None
        if unserved:
            threads = args.workers or worker_count()
            worker = start_local_worker(threads)
            print(
                f"no running worker has the {APP} app's stages {', '.join(unserved)}: started "
                f"one with {threads} thread(s) (log: {shown_path(worker.log_path)})",
                file=sys.stderr,
            )
        try:
            return wait_for_fields(
                conn, documents, args.timeout, worker, explain=args.explain, tenant=args.tenant
            )
        finally:
            if worker is not None:
                worker.stop()
