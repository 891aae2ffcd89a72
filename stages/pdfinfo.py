"""Validate an uploaded PDF before any work is queued for it.

:func:`inspect_pdf` runs the cheap checks in the parent (size, magic bytes, a streamed SHA-256) and
lets PDFium open the file only in a killable, memory-limited child process (see
:mod:`ocr`): a hostile or broken file cannot crash or hang the caller. Every problem
with the input comes back as a :class:`~errors.DocumentError` with a message for a human;
a parser killed by a signal other than its own CPU limit raises the retryable
:class:`~errors.KilledBySignal` instead.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pg_pipeline_documents.errors import DocumentError, OcrTimeout, signal_death_error
from pg_pipeline_documents.ocr.protocol import LOAD_REASONS
from pg_pipeline_documents.ocr.runner import run_child

PDF_MAGIC = b"%PDF-"
_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class PdfInfo:
    page_count: int
    size_bytes: int
    sha256: str  # hex digest of the file's bytes
    #: Up to ``sample_chars`` of the first pages' text layer ("" when asked for none).
    text_sample: str = ""


def inspect_pdf(
    path: Path,
    *,
    max_bytes: int = 200 * 1024 * 1024,
    max_pages: int = 2000,
    timeout_s: float = 60,
    memory_limit_bytes: int = 2 * 1024**3,
    sample_chars: int = 0,
) -> PdfInfo:
    """Check that ``path`` is a PDF the pipeline can work on, and describe it.

    Checks, in this order, each failing with :class:`DocumentError`: the file is empty; larger
    than ``max_bytes``; does not start with ``%PDF-``; is encrypted; cannot be parsed (damaged or
    truncated); has no pages; has more than ``max_pages`` pages. Parsing that takes longer than
    ``timeout_s`` raises :class:`OcrTimeout` (transient: the machine may just be busy), and a
    parser killed from outside or crashed raises :class:`~errors.KilledBySignal`
    (transient too, see :func:`~errors.signal_death_error`). A missing or unreadable file
    raises the usual :class:`OSError`: that is not the document's fault. With ``sample_chars``,
    the first pages' text layer comes too, up to that many characters.
    """
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        raise DocumentError("file is empty (0 bytes)")
    if size > max_bytes:
        raise DocumentError(
            f"file is too large: {_human_bytes(size)} ({size} bytes), "
            f"the limit is {_human_bytes(max_bytes)}"
        )
    digest = hashlib.sha256()
    size_read = 0
    with path.open("rb") as f:
        first = f.read(_CHUNK)
        if not first.startswith(PDF_MAGIC):
            raise DocumentError("not a PDF: file does not start with %PDF-")
        chunk = first
        while chunk:
            digest.update(chunk)
            size_read += len(chunk)
            if size_read > max_bytes:  # it grew since stat()
                raise DocumentError(f"file is too large: the limit is {_human_bytes(max_bytes)}")
            chunk = f.read(_CHUNK)

    page_count, sample = _count_pages(
        path, timeout_s=timeout_s, memory_limit_bytes=memory_limit_bytes, sample_chars=sample_chars
    )
    if page_count == 0:
        raise DocumentError("PDF has no pages")
    if page_count > max_pages:
        raise DocumentError(f"PDF has too many pages: {page_count}, the limit is {max_pages}")
    return PdfInfo(
        page_count=page_count, size_bytes=size_read, sha256=digest.hexdigest(), text_sample=sample
    )


def _count_pages(
    path: Path, *, timeout_s: float, memory_limit_bytes: int, sample_chars: int
) -> tuple[int, str]:
    outcome = run_child(
        {"op": "info", "pdf": str(path.resolve()), "sample_chars": sample_chars},
        timeout_s=timeout_s,
        memory_limit_bytes=memory_limit_bytes,
    )
    result = outcome.result
    if result is None:
        if outcome.timed_out:
            raise OcrTimeout(f"PDF parsing timed out after {timeout_s:g} s")
        if outcome.returncode < 0:
            raise signal_death_error("PDF parser", outcome.returncode)
        raise DocumentError(
            f"PDF is damaged: the parser exited with status {outcome.returncode}"
            + (f": {outcome.stderr_tail}" if outcome.stderr_tail else "")
        )
    if result["ok"]:
        return int(result["page_count"]), str(result.get("text_sample", ""))
    kind, message = result["kind"], result["message"]
    if kind == "load":
        raise DocumentError(
            LOAD_REASONS.get(result.get("reason", ""), f"PDF is damaged or truncated: {message}")
        )
    if kind == "memory":
        raise DocumentError(
            f"PDF is too complex: parsing it needs more than {_human_bytes(memory_limit_bytes)}"
        )
    if kind == "pdfium":
        raise DocumentError(f"PDF is damaged or truncated: {message}")
    # setup / internal: the environment or this code is at fault, not the document.
    raise RuntimeError(f"PDF inspection failed ({kind}): {message}")


def _human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
