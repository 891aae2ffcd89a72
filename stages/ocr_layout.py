"""A page's layout in the worker: from what its OCR child reported, through the extractor's own
grouping of words into spans (:func:`layout.spans_from_words`), in reading order.

A text layer's layout comes from the child whole (:mod:`ocr.text_layer`); a scan's
comes as tesseract's words (:mod:`ocr.ocr_words`), in the child's result or the
tesseract command's TSV output, and is made here, the same way for both.
"""

from __future__ import annotations

import logging
from itertools import groupby
from typing import Any

from pydantic import ValidationError

from pg_pipeline_documents.layout import PageLayout, Word, spans_from_words
from pg_pipeline_documents.ocr.ocr_words import OcrWord, type_size
from pg_pipeline_documents.ocr.reading_order import in_reading_order

logger = logging.getLogger(__name__)


def reported_layout(reported: Any) -> PageLayout | None:
    """The layout a child reported for a text layer or a blank page, or None."""
    if reported is None:
        return None
    try:
        return PageLayout.model_validate(reported)
    except ValidationError as exc:  # a page of no area, say: the text stands without it
        logger.warning("a page's layout could not be read: %s", exc)
        return None


def scan_layout(words: list[OcrWord], dpi: int, width: float, height: float) -> PageLayout | None:
    """The layout of a scan from the words tesseract read on its ``dpi`` render."""
    if not (width > 0 and height > 0):
        return None
    scale = 72 / dpi
    placed = []
    for _, grouped in groupby(words, key=lambda w: w.line):
        line = [w for w in grouped if w.text.strip()]
        if not line:
            continue
        # A scan has no font size: the line's glyphs tell it, in points.
        size = type_size(line) * scale
        placed += [
            Word(
                w.text.strip(),
                w.left * scale,
                w.top * scale,
                w.right * scale,
                w.bottom * scale,
                size,
            )
            for w in line
        ]
    spans = spans_from_words(placed)
    return PageLayout(width=width, height=height, spans=in_reading_order(spans, width, height))


def reported_words(reported: Any) -> list[OcrWord]:
    """The words a child reported (:meth:`OcrWord.as_list` each)."""
    return [OcrWord(*word) for word in reported or []]
