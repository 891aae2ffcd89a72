"""The built-in document pipeline: upload -> ocr (one job per page) -> extract [-> review].

Large inputs never travel in payloads: the PDF is a content-addressed blob and jobs carry its
key. Each stage's output commits with its job's completion (see pg_pipeline.stage); the OCR
fan-out's join enqueues `extract` once the last page is done. When review is on for the
document, `extract` enqueues `review`, which waits for a person when a field is uncertain
(pg_pipeline_documents.review).
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from pg_pipeline import (
    BlobNotFound,
    BlobStore,
    BlobStoreUnavailable,
    Context,
    LocalBlobStore,
    RetryableError,
    WaitTimedOut,
    blob_store_from_env,
    data_dir,
    require_extra,
    stage,
)
from pg_pipeline_documents.document_cache import DEFAULT_MAX_AGE_S, DEFAULT_MAX_BYTES, DocumentCache
from pg_pipeline_documents.errors import DocumentError, OcrTimeout
from pg_pipeline_documents.extract import extract_fields
from pg_pipeline_documents.extract_llm import BASE_URL_ENV, LLM_FEATURE
from pg_pipeline_documents.layout import PageLayout
from pg_pipeline_documents.llm_limits import llm_token_limits
from pg_pipeline_documents.ocr_engine import ocr_page, page_region
from pg_pipeline_documents.ocr_language import DEFAULT_LANGUAGE, SAMPLE_CHARS, document_language
from pg_pipeline_documents.pdfinfo import inspect_pdf
from pg_pipeline_documents.review import (
    WAIT_NAME,
    Reviewed,
    ReviewSettings,
    corrections,
    evidence_region,
    needs_review,
    review_detail,
    review_enabled,
    review_settings,
)
from pg_pipeline_documents.tender import TenderExtraction, TenderFields

logger = logging.getLogger(__name__)

# PDFium and Pillow load only in the OCR children: without this, a worker given the documents app
# in an install without its extra would start, and fail every document with an import error.
require_extra("documents", "the documents app")
if os.environ.get(BASE_URL_ENV, "").strip():  # at start, not when each document is extracted
    require_extra("llm", LLM_FEATURE)
# At start too: a worker with a misspelt PIPELINE_REVIEW_* refuses to start, rather than fail
# (or mis-review) each document once it is extracted.
review_enabled()
review_settings()

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
#: Review: reads two outputs and writes one; the person's time is the wait's, not the job's.
REVIEW_TIMEOUT_S = 120.0

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
    #: Whether a person reviews the uncertain fields (`pipeline submit --review`); None: as the
    #: workers' PIPELINE_REVIEW says (off by default).
    review: bool | None = None


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
    review: bool | None = None  #: as in Upload


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
    then = Extract(pages=info.page_count, review=job.review)
    ctx.fan_out("ocr", pages, then=("extract", then))
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
    # What the page cost: a page, one more OCR'd by tesseract, and its child process's CPU,
    # which the worker adds to the attempt's cpu_s.
    ctx.usage(pages=1, ocr_pages=int(result.method == "ocr"))
    if result.child_cpu_s is not None:
        ctx.usage(child_cpu_s=result.child_cpu_s)
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
    # The endpoint's tokens per minute, when an LLM is configured (pipeline_documents'
    # llm_limits.py): a document waits queued rather than spend an attempt on a 429.
    limits=llm_token_limits(),
)
def extract(job: Extract, ctx: Context) -> TenderExtraction:
    pages = [PageResult.model_validate(out) for _, out in ctx.outputs("ocr")]
    if len(pages) != job.pages:
        raise RetryableError(f"found {len(pages)} of {job.pages} OCR'd pages")
    # Pages, so evidence can name them; layouts, so labels pair with values as drawn.
    extraction = extract_fields(
        [p.text for p in pages], layouts=[p.layout for p in pages], usage=ctx.usage
    )
    if review_enabled(job.review):
        # This worker's settings, carried in the payload: see ReviewSettings.
        ctx.enqueue("review", review_settings())
    return extraction


#: Characters of the pictures beside the fields at most: the wait's detail is stored as JSON,
#: within the payload limit.
PICTURES_MAX_CHARS = 120_000


def pictures(
    uploaded: Uploaded,
    pages: list[PageResult],
    extraction: TenderExtraction,
    flagged: Mapping[str, str],
) -> dict[str, str]:
    """A picture of the page around the line each flagged field was read from, as a PNG data
    URI: what the reviewer compares the value with (the text may be OCR's misreading). An
    addition: a picture that cannot be drawn is left out, never a failure."""
    layouts = [p.layout for p in pages]
    wanted = {}
    for name in flagged:
        ev = extraction.evidence.get(name)
        region = None if ev is None else evidence_region(layouts, ev)
        if region is not None:
            wanted[name] = region
    if not wanted:
        return {}
    out: dict[str, str] = {}
    budget = PICTURES_MAX_CHARS
    try:
        with local_copy(uploaded.blob_key) as path:
            for name, (page, band, mark) in wanted.items():
                try:
                    png = page_region(path, page, band, mark=mark)
                except (DocumentError, OcrTimeout, RuntimeError) as exc:
                    logger.info("no picture of %s: %s", name, exc)
                    continue
                uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
                if len(uri) <= budget:
                    out[name] = uri
                    budget -= len(uri)
    except (DocumentError, RetryableError) as exc:
        logger.info("no pictures of the fields: %s", exc)
    return out


@stage("review", max_attempts=3, lease=60, timeout=REVIEW_TIMEOUT_S, permanent=(DocumentError,))
def review(job: ReviewSettings, ctx: Context) -> Reviewed:
    """The extracted fields as they stand after review: as extracted when every field is sure,
    else as a person answered on the dashboard's Review page (the run waits till then, holding
    no worker), or as extracted when no one answered in time.

    The stage runs again from the top when the answer comes: everything before `wait_for` only
    reads, and decides the same from the same payload and outputs."""
    found = ctx.outputs("extract")
    if not found:
        raise RetryableError("the document's extracted fields are not stored yet")
    extraction = TenderExtraction.model_validate(found[0][1])
    uploaded = ctx.outputs("upload")
    filename = Uploaded.model_validate(uploaded[0][1]).filename if uploaded else None
    flagged = needs_review(extraction, job)
    if not flagged:
        return Reviewed(fields=extraction.fields(), status="sure", filename=filename)
    pages = [PageResult.model_validate(out) for _, out in ctx.outputs("ocr")]  # by part
    images = (
        pictures(Uploaded.model_validate(uploaded[0][1]), pages, extraction, flagged)
        if uploaded
        else {}
    )
    detail = review_detail(
        extraction, [p.text for p in pages], flagged, filename=filename, images=images
    )
    try:
        answer = ctx.wait_for(
            WAIT_NAME,
            TenderFields,
            timeout=job.timeout_s,
            proposal=extraction.fields(),
            detail=detail,
        )
    except ValidationError as exc:
        # signal() checked the answer against TenderFields' JSON schema; what that cannot
        # say (a date that is no date, sent by a program rather than the dashboard's form)
        # fails here, for good: the same answer would fail again.
        raise DocumentError(f"the review's answer is not TenderFields: {exc}") from exc
    except WaitTimedOut:
        return Reviewed(
            fields=extraction.fields(), status="timed_out", flagged=flagged, filename=filename
        )
    labels = corrections(extraction, answer)
    return Reviewed(
        fields=answer,
        status="corrected" if labels else "accepted",
        flagged=flagged,
        labels=labels,
        filename=filename,
    )
