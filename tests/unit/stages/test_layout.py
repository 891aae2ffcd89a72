"""Page layouts: words into spans, and PDFium's text layer into a layout."""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium

from pg_pipeline_documents.layout import (
    MAX_SPANS,
    PageLayout,
    Word,
    layout_from_textpage,
    spans_from_words,
)
from tests.support.pdfs import write_pdf


def _pdf(path: Path, content: bytes) -> Path:
    return write_pdf(
        path,
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
            b" /Resources << /Font << /F1 4 0 R /F2 5 0 R >> >> /Contents 6 0 R >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold >>",
            b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        ],
    )


def _layout(pdf: Path) -> PageLayout:
    doc = pdfium.PdfDocument(pdf)
    try:
        page = doc[0]
        textpage = page.get_textpage()
        layout = layout_from_textpage(textpage, *page.get_size())
        textpage.close()
        return layout
    finally:
        doc.close()


def test_a_text_layer_gives_spans_with_sizes_weights_and_top_down_boxes(tmp_path: Path) -> None:
    content = (
        b"BT /F2 20 Tf 72 720 Td (Road Maintenance Works) Tj ET "
        b"BT /F1 10 Tf 72 600 Td (Closing date:) Tj ET "
        b"BT /F1 10 Tf 300 600 Td (12 March 2027) Tj ET "
        # Size 1, scaled by the text matrix to 12 points (as some generators draw text).
        b"BT /F1 1 Tf 12 0 0 12 72 500 Tm (Scaled text) Tj ET"
    )
    layout = _layout(_pdf(tmp_path / "a.pdf", content))
    texts = [s.text for s in layout.spans]
    assert texts == ["Road Maintenance Works", "Closing date:", "12 March 2027", "Scaled text"]
    title, label, value, scaled = layout.spans
    assert title.bold and not label.bold
    assert title.size == 20 and label.size == 10 and scaled.size == 12
    # Top-left origin: the title (drawn at y=720 from the bottom) is near the top.
    assert title.y0 < label.y0 < scaled.y0 and title.y0 < 792 - 700
    assert abs(label.y0 - value.y0) < 1 and value.x0 > label.x1 + 100
    assert layout.width == 612 and layout.height == 792


def test_words_close_together_make_one_span_and_a_wide_gap_two() -> None:
    words = [
        Word("Bid", 10, 100, 25, 110, 10),
        Word("End", 28, 100, 45, 110, 10),
        Word("Date", 48, 100, 70, 110, 10),
        Word("21-03-2027", 200, 101, 260, 111, 10),
        Word("below", 10, 130, 40, 140, 10),
    ]
    spans = spans_from_words(words)
    assert [s.text for s in spans] == ["Bid End Date", "21-03-2027", "below"]


def test_a_change_of_font_size_ends_a_span() -> None:
    words = [Word("TITLE", 10, 100, 80, 124, 24), Word("small", 82, 112, 100, 122, 10)]
    assert [s.text for s in spans_from_words(words)] == ["TITLE", "small"]


def test_ten_thousand_short_lines_stay_bounded() -> None:
    words = [Word("x", 10, 12.0 * i, 15, 12.0 * i + 10, 10) for i in range(10_000)]
    spans = spans_from_words(words)
    assert len(spans) == MAX_SPANS
    assert spans[0].text == "x" and spans[1].y0 > spans[0].y0
