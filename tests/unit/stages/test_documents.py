"""How the document stages are declared: what the queue is told about them."""

from __future__ import annotations

import signal

import pg_pipeline_documents.documents  # noqa: F401  registers the stages
from pg_pipeline import REGISTRY, StageSpec


def test_a_document_whose_pages_are_read_is_extracted_before_other_pages_run() -> None:
    # The claim takes higher priority first; a join-enqueued extract gets its stage's priority.
    assert REGISTRY.get("extract").priority > REGISTRY.get("ocr").priority
    assert REGISTRY.get("extract").priority > REGISTRY.get("upload").priority


def test_a_broken_page_fails_for_good_but_a_slow_one_is_retried() -> None:
    from pg_pipeline_documents.errors import DocumentError, OcrTimeout

    ocr = REGISTRY.get("ocr")
    assert ocr.is_permanent(DocumentError("page 3: PDFium could not render the page"))
    assert not ocr.is_permanent(OcrTimeout("page 3: OCR timed out after 120 s"))
    assert ocr.max_attempts > 1


def _built_in_stages() -> list[StageSpec]:
    specs = [REGISTRY.get(name) for name in REGISTRY.names()]
    return [spec for spec in specs if spec.fn.__module__.startswith("pg_pipeline_documents.")]


def test_every_built_in_stage_has_a_timeout() -> None:
    specs = _built_in_stages()
    assert {spec.name for spec in specs} >= {"upload", "ocr", "extract"}
    untimed = [spec.name for spec in specs if spec.timeout_s is None or spec.timeout_s <= 0]
    assert untimed == []


def test_stage_timeouts_leave_room_for_the_bounds_inside_them() -> None:
    # A stage timeout that fired before its own inner limits would replace their clear message
    # ("page 3: OCR timed out after 120 s") with a bare timeout.
    from pg_pipeline_documents import documents, ocr_language
    from pg_pipeline_documents.extract_llm import LlmExtractor

    llm = LlmExtractor(base_url="http://127.0.0.1:9/v1", model="any")
    llm_worst_case = (llm.max_retries + 1) * llm.timeout_s
    timeout = {spec.name: spec.timeout_s or 0.0 for spec in _built_in_stages()}
    assert timeout["ocr"] > documents.OCR_TIMEOUT_S
    detect = ocr_language.DETECT_LOOKS * ocr_language.DETECT_TIMEOUT_S
    assert timeout["upload"] > documents.PARSE_TIMEOUT_S + detect
    assert timeout["extract"] > llm_worst_case
    # Minutes, not hours: a stuck job must come back to the queue within one working session.
    assert max(timeout.values()) <= 15 * 60


def test_a_page_whose_renderer_was_killed_from_outside_is_retried() -> None:
    from pg_pipeline_documents.errors import KilledBySignal, signal_death_error

    error = signal_death_error("page 3: renderer", -signal.SIGKILL)
    assert isinstance(error, KilledBySignal)
    for name in ("upload", "ocr", "extract"):
        assert not REGISTRY.get(name).is_permanent(error)
