"""The built-in document pipeline: upload -> ocr (one job per page) -> extract.

Large inputs never travel in payloads: the PDF is a content-addressed blob and jobs carry its
key. Each stage's output commits with its job's completion (see pg_pipeline.stage); the OCR
fan-out's join enqueues `extract` once the last page is done.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, Field

from pg_pipeline import (
    BlobNotFound,
    BlobStore,
    BlobStoreUnavailable,
    Context,
    LocalBlobStore,
    RetryableError,
    blob_store_from_env,
    data_dir,
    require_extra,
    stage,
)
from pg_pipeline_documents.document_cache import DEFAULT_MAX_AGE_S, DEFAULT_MAX_BYTES, DocumentCache
from pg_pipeline_documents.errors import DocumentError
from pg_pipeline_documents.extract import extract_fields
from pg_pipeline_documents.extract_llm import BASE_URL_ENV, LLM_FEATURE
from pg_pipeline_documents.layout import PageLayout
from pg_pipeline_documents.ocr_engine import ocr_page
from pg_pipeline_documents.ocr_language import DEFAULT_LANGUAGE, SAMPLE_CHARS, document_language
from pg_pipeline_documents.pdfinfo import inspect_pdf
from pg_pipeline_documents.tender import TenderExtraction

# PDFium and Pillow load only in the OCR children: without this, a worker given the documents app
# in an install without its extra would start, and fail every document with an import error.
require_extra("documents", "the documents app")
if os.environ.get(BASE_URL_ENV, "").strip():  # at start, not when each document is extracted
    require_extra("llm", LLM_FEATURE)

OCR_DPI = 300  #: rendering resolution for pages without a text layer
OCR_TIMEOUT_S = 120.0  #: one page's render + tesseract, after which the child is killed
OCR_MEMORY_BYTES = 2 * 1024**3  #: address-space limit of the OCR child process
MAX_PAGES = 2000  #: documents with more pages are rejected at submit
PARSE_TIMEOUT_S = 60.0  #: PDFium counting a document's pages, in its child process
# Each stage's timeout is a backstop above its own inner bounds, so that those (with their
# clearer messages) fire first; it catches what they do not bound, such as a hung download.
#: Upload: download up to 200 MB, hash it, parse it (PARSE_TIMEOUT_S), tell its language (four
#: first-pass looks at most, DETECT_TIMEOUT_S each), fan out 2000 page jobs.
UPLOAD_TIMEOUT_S = 300.0
#: Extract: the LLM client's worst case with its defaults is 3 requests of 120 s each.
EXTRACT_TIMEOUT_S = 480.0

_store: BlobStore | None = None
_store_lock = threading.Lock()


def blob_store() -> BlobStore:
    """The store named by PIPELINE_BLOB_URL (a local directory by default), made once."""
    global _store
    with _store_lock:
        if _store is None:
            _store = blob_store_from_env()
        return _store


#: Bounds of a worker's copies of remote documents (see pg_pipeline_documents.document_cache).
CACHE_MAX_BYTES_ENV = "PIPELINE_CACHE_MAX_BYTES"
CACHE_MAX_AGE_ENV = "PIPELINE_CACHE_MAX_AGE_S"
_cache: DocumentCache | None = None


def document_cache() -> DocumentCache:
    """This process's cache of remote documents, under $PIPELINE_HOME/cache, made once."""
    global _cache
    with _store_lock:
        if _cache is None:
            _cache = DocumentCache(
                data_dir() / "cache",
                max_bytes=int(_setting(CACHE_MAX_BYTES_ENV, DEFAULT_MAX_BYTES)),
                max_age_s=_setting(CACHE_MAX_AGE_ENV, DEFAULT_MAX_AGE_S),
            )
        return _cache


def _setting(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise RuntimeError(f"{name} must be a number >= 0, not {raw!r}")
    return value


@contextlib.contextmanager
def local_copy(key: str, stored_in: str | None = None) -> Iterator[Path]:
    """A local path to the blob for the ``with`` block: the file itself for a local store,
    else a copy from the worker's bounded cache (content-addressed, so never stale).

    `stored_in` is the URL of the store the submitter put the blob in (None for jobs from
    before it was recorded). A key names its bytes, so another store that holds the key serves
    as well; one that does not fails the job at once, naming both stores."""
    store = blob_store()
    with contextlib.ExitStack() as held:
        try:
            if isinstance(store, LocalBlobStore):
                path = store.path_for(key)
                if not path.exists():
                    raise BlobNotFound(key)
            else:
                path = held.enter_context(document_cache().copy_of(store, key))
        except BlobNotFound as exc:
            if stored_in is not None and stored_in != store.url:
                raise DocumentError(
                    f"the document's file {key} was stored in {stored_in}, but this worker "
                    f"reads the blob store {store.url}: give the workers PIPELINE_BLOB_URL="
                    f"{stored_in}, as the submitter had"
                ) from exc
            raise DocumentError(f"the document's file {key} is gone from blob storage") from exc
        except BlobStoreUnavailable as exc:
            raise RetryableError(f"blob storage unavailable: {exc}") from exc
        yield path


class Upload(BaseModel):
    blob_key: str
    #: The blob store the submitter put the file in (BlobStore.url; None in jobs from before
    #: it was recorded), so that a worker reading another can say so.
    blob_store_url: str | None = None
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    filename: str
    size_bytes: int = Field(ge=1)


class Uploaded(BaseModel):
    blob_key: str
    sha256: str
    filename: str
    pages: int
    #: The tesseract language the document's scanned pages are read in (outputs from before
    #: it lack it: they were read in English).
    lang: str = DEFAULT_LANGUAGE


class OcrPage(BaseModel):
    blob_key: str
    blob_store_url: str | None = None  #: as in Upload
    page: int = Field(ge=0, description="0-based page index")
    pages: int = Field(ge=1)
    #: Decided once for the document by `upload` (see pg_pipeline_documents.ocr_language): the pages
    #: are read
    #: in parallel, so each carries the decision.
    lang: str = Field(default=DEFAULT_LANGUAGE, pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")


class PageResult(BaseModel):
    page: int
    text: str
    method: str  #: "text_layer", "ocr", or "blank" (no ink to read: not sent to tesseract)
    confidence: float | None
    dpi: int | None
    #: The page's OCR child at its peak, when known (outputs from before it lack it).
    peak_rss_bytes: int | None = None
    #: Where the page's words stand, when the reader could tell (outputs from before it lack it).
    layout: PageLayout | None = None


class Extract(BaseModel):
    pages: int = Field(ge=1)


@stage("upload", max_attempts=3, lease=120, timeout=UPLOAD_TIMEOUT_S, permanent=(DocumentError,))
def upload(job: Upload, ctx: Context) -> Uploaded:
    """Checks the stored PDF again (a worker trusts no submitter) and fans out its pages."""
    with local_copy(job.blob_key, job.blob_store_url) as path:
        info = inspect_pdf(
            path, max_pages=MAX_PAGES, timeout_s=PARSE_TIMEOUT_S, sample_chars=SAMPLE_CHARS
        )
        if info.sha256 != job.sha256:
            raise DocumentError(f"stored file hashes to {info.sha256}, expected {job.sha256}")
        lang = document_language(path, info.text_sample, info.page_count)
    pages = [
        OcrPage(
            blob_key=job.blob_key,
            blob_store_url=job.blob_store_url,
            page=i,
            pages=info.page_count,
            lang=lang,
        )
        for i in range(info.page_count)
    ]
    ctx.fan_out("ocr", pages, then=("extract", Extract(pages=info.page_count)))
    return Uploaded(
        blob_key=job.blob_key,
        sha256=job.sha256,
        filename=job.filename,
        pages=info.page_count,
        lang=lang,
    )


# A page takes seconds: a short lease (heartbeats keep it while the page runs) hands the page of
# a worker that died on to another within about a minute, instead of five.
@stage(
    "ocr",
    max_attempts=3,
    lease=60,
    heartbeat=15,
    timeout=OCR_TIMEOUT_S + 60,
    part=lambda job: job.page,
    # Everything else retries: OcrTimeout, blob storage outages, and a broken OCR setup
    # (RuntimeError), which an operator can fix while the job waits.
    permanent=(DocumentError,),
)
def ocr(job: OcrPage, ctx: Context) -> PageResult:
    """One page: its text layer when it has one, else a 300 dpi render through tesseract
    (unless the render is blank), both in a child process that is killed on timeout or memory
    blow-up."""
    with local_copy(job.blob_key, job.blob_store_url) as path:
        result = ocr_page(
            path,
            job.page,
            dpi=OCR_DPI,
            timeout_s=OCR_TIMEOUT_S,
            memory_limit_bytes=OCR_MEMORY_BYTES,
            lang=job.lang,
        )
    return PageResult(
        page=job.page,
        text=result.text,
        method=result.method,
        confidence=result.confidence,
        dpi=result.dpi,
        peak_rss_bytes=result.peak_rss_bytes,
        layout=result.layout,
    )


# Ahead of queued pages: a document whose pages are all read should not wait for the whole
# backlog of other documents' pages before its fields come out.
@stage(
    "extract",
    max_attempts=4,
    lease=300,
    timeout=EXTRACT_TIMEOUT_S,
    priority=10,
    permanent=(DocumentError,),
)
def extract(job: Extract, ctx: Context) -> TenderExtraction:
    pages = [PageResult.model_validate(out) for _, out in ctx.outputs("ocr")]
    if len(pages) != job.pages:
        raise RetryableError(f"found {len(pages)} of {job.pages} OCR'd pages")
    # Pages, so evidence can name them; layouts, so labels pair with values as drawn.
    return extract_fields([p.text for p in pages], layouts=[p.layout for p in pages])
