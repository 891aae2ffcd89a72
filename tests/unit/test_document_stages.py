"""How the document stages are declared: what the queue is told about them."""

from __future__ import annotations

import stages.documents  # noqa: F401  registers the stages
from pipeline import REGISTRY


def test_a_document_whose_pages_are_read_is_extracted_before_other_pages_run() -> None:
    # The claim takes higher priority first; a join-enqueued extract gets its stage's priority.
    assert REGISTRY.get("extract").priority > REGISTRY.get("ocr").priority
    assert REGISTRY.get("extract").priority > REGISTRY.get("upload").priority


def test_a_broken_page_fails_for_good_but_a_slow_one_is_retried() -> None:
    from stages.errors import DocumentError, OcrTimeout

    ocr = REGISTRY.get("ocr")
    assert ocr.is_permanent(DocumentError("page 3: PDFium could not render the page"))
    assert not ocr.is_permanent(OcrTimeout("page 3: OCR timed out after 120 s"))
    assert ocr.max_attempts > 1
