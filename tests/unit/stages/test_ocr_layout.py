"""A page's layout: spans with their boxes, size and weight, from a text layer (real PDFium) and
from a scan (real tesseract), and the pure functions that group them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from PIL import Image, ImageDraw, ImageFont, ImageOps

from pg_pipeline_documents import ocr_engine
from pg_pipeline_documents.extract_offline import extract_offline_explained
from pg_pipeline_documents.extract_offline.cells import Pair, pairs_from_layout
from pg_pipeline_documents.layout import MAX_SPANS, PageLayout, Span
from pg_pipeline_documents.ocr import fork_server
from pg_pipeline_documents.ocr.ocr_words import OcrWord, type_size
from pg_pipeline_documents.ocr.reading_order import (
    Segment,
    columns_in_reading_order,
    in_reading_order,
)
from pg_pipeline_documents.ocr_engine import ocr_page, tsv_words
from pg_pipeline_documents.ocr_layout import scan_layout
from tests.support.pdfs import write_pdf


@pytest.fixture(autouse=True)
def _fork_servers_stopped() -> Iterator[None]:
    yield
    fork_server.stop_fork_servers()


def page_pdf(path: Path, content: bytes, *, rotate: int = 0, media: bytes = b"0 0 612 792") -> Path:
    """One page drawing ``content`` with Helvetica as /F1 and Helvetica-Bold as /F2."""
    return write_pdf(
        path,
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [%s] /Rotate %d" % (media, rotate)
            + b" /Resources << /Font << /F1 4 0 R /F2 5 0 R >> >> /Contents 6 0 R >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold >>",
            b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        ],
    )


def show(font: bytes, size: float, x: float, y: float, text: bytes) -> bytes:
    return b"BT /%s %g Tf %g %g Td (%s) Tj ET\n" % (font, size, x, y, text)


def _layout(page: ocr_engine.PageText) -> PageLayout:
    assert page.layout is not None
    return page.layout


def _find(layout: PageLayout, text: str) -> Span:
    [span] = [s for s in layout.spans if s.text == text]
    return span


# --- scans' words and reading order (pure) ------------------------------------------------------


def test_scanned_lines_of_capitals_and_of_lower_case_in_one_type_get_one_size() -> None:
    # 300 dpi, 10 pt type: capitals and ascenders 30 px over the baseline (30 / 0.72 px of type).
    capitals = [OcrWord(0, "CONTRACT", 100, 70, 300, 100), OcrWord(0, "NOTICE", 320, 70, 450, 100)]
    lower = [
        OcrWord(1, "Open", 100, 170, 180, 210),  # the p descends
        OcrWord(1, "tender", 190, 170, 300, 200),
        OcrWord(1, "at", 310, 176, 340, 200),
        OcrWord(1, "-", 350, 186, 360, 190),
    ]

    assert type_size(capitals) == type_size(lower) == pytest.approx(30 / 0.72)
    # Tesseract's own baseline, where it gives one, wins over the words' boxes.
    assert type_size([OcrWord(0, "Open", 0, 0, 90, 40, line_ascent=36)]) == pytest.approx(50)


def test_a_scans_words_become_spans_in_points() -> None:
    words = [
        OcrWord(0, "Closing", 300, 300, 450, 330),
        OcrWord(0, "date:", 465, 300, 560, 330),
        OcrWord(0, "12", 1250, 300, 1290, 330),  # across a wide gap: another span
        OcrWord(1, "Lot", 300, 400, 360, 430),
    ]

    layout = scan_layout(words, 300, 612, 792)

    assert layout is not None
    assert [s.text for s in layout.spans] == ["Closing date:", "12", "Lot"]
    first = layout.spans[0]
    assert (first.x0, first.y0, first.x1, first.y1) == pytest.approx((72, 72, 134.4, 79.2))
    assert first.size == pytest.approx(30 / 0.72 * 72 / 300, abs=0.1)


def test_tesseract_tsv_words_keep_their_boxes_and_lines() -> None:
    header = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\t"
    tsv = "\n".join(
        [
            header + "conf\ttext",
            "4\t1\t1\t1\t1\t0\t100\t70\t350\t30\t-1\t",
            "5\t1\t1\t1\t1\t1\t100\t70\t200\t30\t96.1\tCONTRACT",
            "5\t1\t1\t1\t1\t2\t320\t70\t130\t30\t95.0\t ",
            "5\t1\t1\t1\t2\t1\t100\t170\t80\t40\t91.5\tOpen",
        ]
    )

    words = tsv_words(tsv)

    assert [(w.text, w.left, w.top, w.right, w.bottom) for w in words] == [
        ("CONTRACT", 100, 70, 300, 100),
        ("Open", 100, 170, 180, 210),
    ]
    assert words[0].line != words[1].line


def test_two_columns_drawn_row_by_row_are_read_column_by_column() -> None:
    def span(text: str, x0: float, y0: float) -> Span:
        return Span(text=text, x0=x0, y0=y0, x1=x0 + 200, y1=y0 + 9)

    rows = [
        (span(f"left {n}", 72, 100 + 14 * n), span(f"right {n}", 330, 100 + 14 * n))
        for n in range(3)
    ]
    heading = span("Heading", 72, 60)

    ordered = in_reading_order([heading, *[s for row in rows for s in row]], 595, 842)

    assert [s.text for s in ordered] == [
        "Heading",
        "left 0",
        "left 1",
        "left 2",
        "right 0",
        "right 1",
        "right 2",
    ]


def test_a_two_column_block_keeps_what_stands_across_the_middle() -> None:
    # A table of holidays: its second column starts left of the page's middle (306 pt).
    rows = [("New Year's Day", "1st January"), ("Memorial Day", "Last Monday in May")]
    rows += [("Independence Day", "4th July")]
    segments = [
        segment
        for n, (name, date) in enumerate(rows)
        for segment in (
            Segment(name, 72, 600 - 16 * n, 250, 610 - 16 * n),
            Segment(date, 288, 600 - 16 * n, 420, 610 - 16 * n),
        )
    ]

    text = columns_in_reading_order(segments, 612)

    assert text is not None
    assert text.split("\n") == [name for name, _ in rows] + [date for _, date in rows]


# --- the text layer, through PDFium ------------------------------------------------------------


def test_text_layer_spans_carry_boxes_sizes_and_weight_in_reading_order(tmp_path: Path) -> None:
    content = show(b"F2", 16, 72, 720, b"Road Maintenance Tender")
    content += show(b"F1", 10, 72, 690, b"Reference:") + show(b"F1", 10, 300, 690, b"RM-2027-04")
    # 1 Tf scaled by the text matrix, as many generators write it: 12 pt on the page.
    content += b"BT /F1 1 Tf 12 0 0 12 72 660 Tm (Scaled by its matrix) Tj ET\n"
    for n in range(4):  # two columns drawn row by row
        y = 620 - 14 * n
        content += show(b"F1", 10, 72, y, b"Left column line %d" % n)
        content += show(b"F1", 10, 330, y, b"Right column line %d" % n)
    pdf = page_pdf(tmp_path / "layout.pdf", content)

    page = ocr_page(pdf, 0)
    layout = _layout(page)

    assert page.method == "text_layer"
    assert (layout.width, layout.height) == (612, 792)
    assert [s.text for s in layout.spans] == [
        "Road Maintenance Tender",
        "Reference:",
        "RM-2027-04",
        "Scaled by its matrix",
        *[f"Left column line {n}" for n in range(4)],
        *[f"Right column line {n}" for n in range(4)],
    ]
    title = _find(layout, "Road Maintenance Tender")
    assert (title.size, title.bold) == (16, True)
    assert title.x0 == pytest.approx(72, abs=1.5)
    # The baseline is 72 pt from the top: capitals above it, a descender's bit below.
    assert 792 - 720 - 16 < title.y0 < 792 - 720 - 9 and 792 - 720 < title.y1 < 792 - 720 + 5
    reference = _find(layout, "Reference:")
    assert (reference.size, reference.bold) == (10, False)
    assert _find(layout, "RM-2027-04").x0 == pytest.approx(300, abs=1.5)
    assert _find(layout, "Scaled by its matrix").size == pytest.approx(12)


@pytest.mark.parametrize(
    ("rotate", "media"),
    [(0, b"100 50 712 842"), (90, b"0 0 612 792"), (180, b"0 0 612 792"), (270, b"0 0 612 792")],
)
def test_spans_stand_where_the_page_shows_them_whatever_its_rotation_or_origin(
    tmp_path: Path, rotate: int, media: bytes
) -> None:
    content = show(b"F1", 12, 172, 700, b"Text drawn along the page's own x axis")
    pdf = page_pdf(tmp_path / "page.pdf", content, rotate=rotate, media=media)

    page = ocr_page(pdf, 0)
    [span] = _layout(page).spans

    # Rendered at 72 dpi, the ink's box is the span's box in points.
    bitmap = pdfium.PdfDocument(pdf)[0].render(scale=1)
    ink = ImageOps.invert(bitmap.to_pil().convert("L")).getbbox()
    assert ink is not None
    assert page.method == "text_layer"
    assert [span.x0, span.y0, span.x1, span.y1] == pytest.approx(list(ink), abs=2.5)
    assert span.size == 12


def test_the_layout_leaves_the_pages_text_as_it_was(tmp_path: Path) -> None:
    content = b"".join(
        show(b"F1", 10, 72 if n % 2 else 330, 700 - 14 * (n // 2), b"Cell %d of the row" % n)
        for n in range(12)
    )
    pdf = page_pdf(tmp_path / "columns.pdf", content)

    assert ocr_page(pdf, 0, layout=True).text == ocr_page(pdf, 0, layout=False).text
    assert ocr_page(pdf, 0, layout=False).layout is None


def _short_lines() -> bytes:
    return b"".join(
        show(b"F1", 0.5, 10 + 150 * (n // 1250), 780 - 0.6 * (n % 1250), b"%d" % n)
        for n in range(10_000)
    )


def _digits() -> bytes:
    return b"BT /F1 1 Tf 10 400 Td (" + b"1234567890" * 100_000 + b") Tj ET"


@pytest.mark.parametrize("content", [_short_lines, _digits], ids=["short lines", "digits"])
def test_a_pathological_page_keeps_its_text_and_gets_a_bounded_layout(
    tmp_path: Path, content: Callable[[], bytes]
) -> None:
    # 10,000 runs of a few characters each: finding every run's text and style would look at
    # 10,000 x 48,890 characters (40 s here before the bound); a megabyte of digits in one run.
    pdf = page_pdf(tmp_path / "pathological.pdf", content())

    laid = ocr_page(pdf, 0)

    assert laid.method == "text_layer"
    assert laid.text == ocr_page(pdf, 0, layout=False).text
    spans = _layout(laid).spans
    assert 0 < len(spans) <= MAX_SPANS


# --- scans, through tesseract ------------------------------------------------------------------

SCAN_DPI = 200


def scanned(path: Path) -> Path:
    """An A4 scan at 200 dpi: a 20 pt title at (72, 100) pt, 11 pt lines below it."""
    px = SCAN_DPI / 72
    image = Image.new("L", (round(8.27 * SCAN_DPI), round(11.69 * SCAN_DPI)), 255)
    draw = ImageDraw.Draw(image)
    draw.text((72 * px, 100 * px), "Tender for Road Works", font=_font(20), fill=0)
    draw.text((72 * px, 160 * px), "Reference: RW-2027-11", font=_font(11), fill=0)
    draw.text((360 * px, 160 * px), "Lot 3", font=_font(11), fill=0)
    draw.text((72 * px, 190 * px), "Supply of asphalt and paving", font=_font(11), fill=0)
    image.save(path, format="PDF", resolution=SCAN_DPI)
    return path


def _font(points: float) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=round(points * SCAN_DPI / 72))


@pytest.mark.parametrize("engine", ["library", "command"])
def test_a_scans_words_come_with_their_boxes_in_points_and_a_type_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    if engine == "command":
        monkeypatch.setattr(ocr_engine, "tesseract_library", lambda: None)
    pdf = scanned(tmp_path / "scan.pdf")

    page = ocr_page(pdf, 0, dpi=SCAN_DPI)
    layout = _layout(page)

    assert page.method == "ocr"
    assert (layout.width, layout.height) == pytest.approx((595.4, 841.7), abs=0.5)
    assert [s.text for s in layout.spans] == [
        "Tender for Road Works",
        "Reference: RW-2027-11",
        "Lot 3",
        "Supply of asphalt and paving",
    ]
    title, reference, lot, supply = layout.spans
    assert (title.x0, reference.x0, lot.x0) == pytest.approx((72, 72, 360), abs=3)
    # Pillow draws the em box from the given point: capitals start a little below it.
    assert 100 < title.y0 < 100 + 20 * 0.5 and 160 < reference.y0 < 160 + 11 * 0.5
    assert title.size is not None and reference.size is not None and supply.size is not None
    assert title.size == pytest.approx(20, rel=0.2)
    assert reference.size == pytest.approx(11, rel=0.2)
    assert supply.size == pytest.approx(reference.size, rel=0.1)
    assert not any(s.bold for s in layout.spans)  # a scan does not tell


def scanned_form(path: Path) -> Path:
    """An A4 scan of a U.S. SF 1449's first boxes: two labels side by side, each value under
    its label, so that a line of text holds both labels and the next both values."""
    px = SCAN_DPI / 72
    image = Image.new("L", (round(8.27 * SCAN_DPI), round(11.69 * SCAN_DPI)), 255)
    draw = ImageDraw.Draw(image)
    cells = [
        (72, 90, "SOLICITATION/CONTRACT/ORDER FOR COMMERCIAL ITEMS"),
        (72, 150, "5. SOLICITATION NUMBER"),
        (330, 150, "7. ISSUED BY"),
        (72, 170, "47QSWA27Q0042"),
        (330, 170, "GSA Region 5 Acquisition Division"),
        (72, 760, "STANDARD FORM 1449 (REV. 2/2012)"),
    ]
    for x, y, text in cells:
        draw.text((x * px, y * px), text, font=_font(11), fill=0)
    image.save(path, format="PDF", resolution=SCAN_DPI)
    return path


def test_on_a_scan_a_value_printed_under_its_label_is_paired_with_it(tmp_path: Path) -> None:
    # The text alone puts both labels on one line and both values on the next: only the words'
    # boxes tell which value stands under which label.
    page = ocr_page(scanned_form(tmp_path / "sf1449.pdf"), 0, dpi=SCAN_DPI)

    pairs = pairs_from_layout([page.layout])
    found = extract_offline_explained([page.text], [page.layout]).fields()

    assert Pair("5. SOLICITATION NUMBER", "47QSWA27Q0042", 0, below=True) in pairs
    assert Pair("7. ISSUED BY", "GSA Region 5 Acquisition Division", 0, below=True) in pairs
    assert found.reference == "47QSWA27Q0042"
    assert found.issuing_authority == "GSA Region 5 Acquisition Division"
