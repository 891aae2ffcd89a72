"""Text of one PDF page: its text layer when it has one, tesseract OCR otherwise.

All work on the page (PDFium parsing, text extraction, rendering, tesseract) happens in a
killable child process with an address-space limit (see :mod:`ocr`); this module
enforces the wall-clock timeout and turns what happened into a :class:`PageText` or an error:

* :class:`~errors.DocumentError` (permanent): PDFium cannot open or render the page, the
  renderer or tesseract runs out of memory or of CPU time, tesseract fails;
* :class:`~errors.OcrTimeout` (transient): the page took longer than ``timeout_s``;
* :class:`~errors.KilledBySignal` (transient): the renderer or tesseract was killed from
  outside (the OOM killer, an operator) or crashed (see :func:`~errors.signal_death_error`).

Pages are numbered from 1 in messages ("page 3" is ``page_index=2``).
"""

from __future__ import annotations

import base64
import ctypes.util
import functools
import logging
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pg_pipeline_documents.errors import DocumentError, OcrTimeout, signal_death_error
from pg_pipeline_documents.layout import PageLayout
from pg_pipeline_documents.ocr.ocr_words import OcrWord
from pg_pipeline_documents.ocr.protocol import LOAD_REASONS
from pg_pipeline_documents.ocr.runner import run_child
from pg_pipeline_documents.ocr_layout import reported_layout, reported_words, scan_layout

logger = logging.getLogger(__name__)

# Files tesseract leaves in the child's work directory (``tesseract IMAGE ocr txt tsv``).
_OCR_TEXT = "ocr.txt"
_OCR_TSV = "ocr.tsv"
#: A rendered page with fewer ink blocks is blank. A 10 pt "e" or "3" makes 17 to 19 of them at
#: 200 or 300 dpi, an "i" 6 and a full stop 2; a scanner's specks and a grey background make none.
BLANK_BELOW_INK_BLOCKS = 12


class PageText(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    # "blank": rendered, but with less ink than a character or two (specks, a faint border), so
    # not sent to tesseract; its text is empty.
    method: Literal["text_layer", "ocr", "blank"]
    # Mean tesseract word confidence, 0-100. None for a text layer, and for an OCR'd page on
    # which tesseract found no words at all.
    confidence: float | None = Field(default=None, ge=0, le=100)
    # The resolution the page was rendered at for OCR: the requested dpi, or lower when the
    # page would have exceeded max_pixels. None for a text layer.
    dpi: int | None = None
    # The page's child process at its peak (PDFium's render, then tesseract), when known.
    peak_rss_bytes: int | None = None
    # Where the page's words stand (None when not asked for, or when the reader failed at it).
    layout: PageLayout | None = None
    # The CPU seconds of the page's child process (tesseract's included), when known: the
    # stage reports it as ctx.usage(child_cpu_s=...).
    child_cpu_s: float | None = None


def ocr_page(
    pdf_path: Path,
    page_index: int,
    *,
    dpi: int = 300,
    timeout_s: float = 120,
    memory_limit_bytes: int = 2 * 1024**3,
    max_pixels: int = 60_000_000,
    min_text_chars: int = 20,
    lang: str = "eng",
    blank_below: int = BLANK_BELOW_INK_BLOCKS,
    layout: bool = True,
    band: tuple[float, float] | None = None,
) -> PageText:
    """Text of page ``page_index`` (0-based) of ``pdf_path``.

    The page's text layer is used when it has at least ``min_text_chars`` non-space characters;
    otherwise the page is rendered at ``dpi`` (lowered so that the image has at most
    ``max_pixels`` pixels) and OCR'd by tesseract in language ``lang``. ``timeout_s`` bounds the
    whole page, wall clock. ``memory_limit_bytes`` bounds the address space of the page's child
    process while it renders and while tesseract recognises (in the child, with the language's
    model it inherited, or as the command that replaces it). A rendered page with
    fewer than ``blank_below`` ink blocks (squares of ~1/75 inch with a stroke through them, see
    :func:`ocr.raster.ink_blocks`; 0 turns the check off) is returned as ``blank``
    without OCR. With ``layout``, the page's spans come too (:class:`PageLayout`): the text
    layer's runs with their font size and weight, or the words tesseract read with their boxes.
    With ``band`` (top, bottom, as fractions of the page's height from its top), a scanned page
    is read only between those edges, without a layout: a cheaper first look.

    Raises IndexError for a page outside the document, FileNotFoundError for a missing file and
    RuntimeError when the environment is broken (tesseract or its language data missing).
    """
    if page_index < 0:
        raise IndexError(f"page_index must be >= 0, not {page_index}")
    if dpi < 1 or max_pixels < 1:
        raise ValueError("dpi and max_pixels must be positive")
    if band is not None:
        if not 0 <= band[0] < band[1] <= 1:
            raise ValueError(f"band must be (top, bottom) with 0 <= top < bottom <= 1: {band}")
        layout = False
    pdf = Path(pdf_path)
    if not pdf.is_file():
        raise FileNotFoundError(f"no such file: {pdf}")
    label = f"page {page_index + 1}"
    outcome = run_child(
        {
            "op": "page",
            "pdf": str(pdf.resolve()),
            "page_index": page_index,
            "dpi": dpi,
            "max_pixels": max_pixels,
            "min_text_chars": min_text_chars,
            "lang": lang,
            "tesseract": shutil.which("tesseract"),
            "tesseract_library": tesseract_library(),
            "blank_below": blank_below,
            "layout": layout,
            "band": list(band) if band is not None else None,
        },
        timeout_s=timeout_s,
        memory_limit_bytes=memory_limit_bytes,
        collect=(_OCR_TEXT, _OCR_TSV),
    )
    if outcome.timed_out:
        raise OcrTimeout(f"{label}: OCR timed out after {timeout_s:g} s")
    result = outcome.result
    if result is None:
        if outcome.returncode < 0:
            raise signal_death_error(f"{label}: renderer", outcome.returncode)
        raise DocumentError(
            f"{label}: renderer exited with status {outcome.returncode}"
            + (f": {outcome.stderr_tail}" if outcome.stderr_tail else "")
        )
    if not result["ok"]:
        raise _failure_to_error(label, result, memory_limit_bytes)
    peak = outcome.peak_rss_bytes
    spans = reported_layout(result.get("layout"))
    if result.get("method") == "blank":
        return PageText(
            text="",
            method="blank",
            dpi=result["dpi"],
            peak_rss_bytes=peak,
            layout=spans,
            child_cpu_s=outcome.cpu_s,
        )
    if result.get("stage") != "tesseract":
        return PageText(
            text=result["text"],
            method="text_layer",
            peak_rss_bytes=peak,
            layout=spans,
            child_cpu_s=outcome.cpu_s,
        )
    if result.get("method") == "ocr":  # read in the child's own process
        _warn_if_lowered(label, result, max_pixels)
        if layout:
            width, height = result["page_size"]
            words = reported_words(result.get("words"))
            spans = scan_layout(words, result["dpi"], width, height)
        return PageText(
            text=result["text"].replace("\f", "").strip(),
            method="ocr",
            confidence=result["confidence"],
            dpi=result["dpi"],
            peak_rss_bytes=peak,
            layout=spans,
            child_cpu_s=outcome.cpu_s,
        )
    # The child rendered the page and then died in tesseract, or became the tesseract command:
    # the exit status is tesseract's.
    detail = f": {outcome.stderr_tail}" if outcome.stderr_tail else ""
    if outcome.returncode == -signal.SIGABRT and _looks_out_of_memory(outcome.stderr_tail):
        # An allocation refused under the memory limit: tesseract aborts on std::bad_alloc.
        raise DocumentError(
            f"{label}: OCR needs more memory than the limit of "
            f"{memory_limit_bytes / 1024**2:.0f} MiB{detail}"
        )
    if outcome.returncode < 0:
        raise signal_death_error(f"{label}: tesseract", outcome.returncode, detail)
    if "Could not initialize tesseract" in outcome.stderr_tail:
        # Missing language data or a broken install: the environment's fault, not the page's.
        raise RuntimeError(f"{label}: tesseract could not start{detail}")
    if outcome.returncode != 0 and _looks_out_of_memory(outcome.stderr_tail):
        raise DocumentError(
            f"{label}: OCR needs more memory than the limit of "
            f"{memory_limit_bytes / 1024**2:.0f} MiB{detail}"
        )
    if outcome.returncode != 0:
        raise DocumentError(
            f"{label}: tesseract failed with exit status {outcome.returncode}{detail}"
        )
    if _OCR_TEXT not in outcome.files or _OCR_TSV not in outcome.files:
        raise DocumentError(f"{label}: tesseract produced no output{detail}")
    _warn_if_lowered(label, result, max_pixels)
    if layout:
        width, height = result["page_size"]
        spans = scan_layout(tsv_words(outcome.files[_OCR_TSV]), result["dpi"], width, height)
    return PageText(
        text=outcome.files[_OCR_TEXT].replace("\f", "").strip(),
        method="ocr",
        confidence=mean_word_confidence(outcome.files[_OCR_TSV]),
        dpi=result["dpi"],
        peak_rss_bytes=peak,
        layout=spans,
        child_cpu_s=outcome.cpu_s,
    )


REGION_DPI = 100  #: a region beside a field is read on a screen, not OCR'd


def page_region(
    pdf_path: Path,
    page_index: int,
    box: tuple[float, float, float, float],
    *,
    mark: tuple[float, float, float, float] | None = None,
    dpi: int = REGION_DPI,
    timeout_s: float = 20,
    memory_limit_bytes: int = 512 * 1024**2,
) -> bytes:
    """Part of page ``page_index`` (0-based): ``box`` (x0, y0, x1, y1 in points from the
    page's top-left corner, as the layout's spans have them) as a greyscale PNG, ``mark``
    outlined in it; rendered in a killable child like every page (see pg_pipeline_documents.ocr).
    DocumentError when it cannot be drawn, OcrTimeout past ``timeout_s``."""
    label = f"page {page_index + 1}"
    outcome = run_child(
        {
            "op": "region",
            "pdf": str(Path(pdf_path).resolve()),
            "page_index": page_index,
            "box": list(box),
            "mark": None if mark is None else list(mark),
            "dpi": dpi,
        },
        timeout_s=timeout_s,
        memory_limit_bytes=memory_limit_bytes,
    )
    if outcome.timed_out:
        raise OcrTimeout(f"{label}: drawing a region timed out after {timeout_s:g} s")
    result = outcome.result
    if result is None:
        raise DocumentError(f"{label}: the renderer exited with status {outcome.returncode}")
    if not result["ok"]:
        raise _failure_to_error(label, result, memory_limit_bytes)
    return base64.b64decode(result["png"])


def _warn_if_lowered(label: str, result: dict[str, Any], max_pixels: int) -> None:
    if result["dpi"] != result["requested_dpi"]:
        logger.warning(
            "%s: rendered at %s dpi instead of %s to stay within %s pixels",
            label,
            result["dpi"],
            result["requested_dpi"],
            max_pixels,
        )


@functools.cache
def tesseract_library() -> str | None:
    """The tesseract library the OCR child loads to read pages in its own process, or None:
    pages then go through the ``tesseract`` command, which costs ~150 ms of CPU more per page
    (its start and model load, the image file, the tsv output)."""
    binary = shutil.which("tesseract")
    if binary is not None:  # the library next to the command (Homebrew, /usr/local, /opt)
        prefix = Path(binary).resolve().parent.parent
        for pattern in ("lib/libtesseract.so.[0-9]*", "lib/libtesseract.[0-9]*.dylib"):
            found = sorted(prefix.glob(pattern))
            if found:
                return str(found[-1])
    return ctypes.util.find_library("tesseract")


def _looks_out_of_memory(stderr: str) -> bool:
    # Leptonica's allocation failures, and the loader failing to map tesseract's libraries.
    markers = ("malloc fail", "failed to map segment", "Cannot allocate memory", "bad_alloc")
    return any(marker in stderr for marker in markers)


def _tsv_word_rows(tsv: str) -> Iterator[list[str]]:
    """The rows of tesseract's TSV output that are words with text."""
    # Columns: level page_num block_num par_num line_num word_num left top width height conf text
    for line in tsv.splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) >= 12 and cols[0] == "5" and cols[11].strip():
            yield cols


def tsv_words(tsv: str) -> list[OcrWord]:
    """The words of tesseract's TSV output with their boxes, lines told apart by their block,
    paragraph and line numbers."""
    words = []
    for cols in _tsv_word_rows(tsv):
        try:
            left, top, width, height = (int(col) for col in cols[6:10])
        except ValueError:
            continue
        words.append(OcrWord(cols[1:5], cols[11], left, top, left + width, top + height))
    return words


def mean_word_confidence(tsv: str) -> float | None:
    """Mean confidence of the words in tesseract's TSV output; None when there are none."""
    confidences = []
    for cols in _tsv_word_rows(tsv):
        try:
            conf = float(cols[10])
        except ValueError:
            continue
        if conf >= 0:
            confidences.append(conf)
    return sum(confidences) / len(confidences) if confidences else None


def _failure_to_error(label: str, result: dict[str, Any], memory_limit_bytes: int) -> Exception:
    kind, message = result["kind"], result["message"]
    if kind == "load":
        if result.get("reason") in ("password", "security"):
            return DocumentError(f"{label}: {LOAD_REASONS[result['reason']]}")
        if result.get("reason") == "no_pages":
            return IndexError(f"{label} does not exist: the document has no pages")
        return DocumentError(f"{label}: PDFium could not open the document: {message}")
    if kind == "pdfium":
        return DocumentError(f"{label}: PDFium could not render the page: {message}")
    if kind == "memory":
        return DocumentError(
            f"{label}: rendering needs more memory than the limit of "
            f"{memory_limit_bytes / 1024**2:.0f} MiB"
        )
    if kind == "document":
        return DocumentError(f"{label}: {message}")
    if kind == "tesseract":
        return DocumentError(f"{label}: {message}")
    if kind == "page_range":
        return IndexError(f"{label} does not exist: {message}")
    # setup / internal: the environment or this code is at fault, not the document.
    return RuntimeError(f"{label}: OCR worker failed ({kind}): {message}")


def tesseract_available() -> str | None:
    """The installed tesseract's version ("5.3.0"), or None when it is missing or broken."""
    binary = shutil.which("tesseract")
    if binary is None:
        return None
    try:
        proc = subprocess.run(
            [binary, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    # tesseract 3.x printed this to stderr, later versions to stdout: "tesseract 5.3.0\n ..."
    for line in (proc.stdout + proc.stderr).decode("utf-8", errors="replace").splitlines():
        words = line.split()
        if len(words) >= 2 and words[0].lower() == "tesseract":
            return words[1].lstrip("v")
    return None
