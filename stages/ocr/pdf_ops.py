"""What a child does to the document: count its pages (``info``), read one page (``page``):
its text layer when it has one, else its render through tesseract, or draw part of a page as a
small PNG (``region``: what a reviewer sees beside a field)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from pg_pipeline_documents.ocr.ocr_words import MAX_WORDS
from pg_pipeline_documents.ocr.protocol import OpResult, SetupError, failure, write_result
from pg_pipeline_documents.ocr.raster import (
    fit_dpi,
    ink_blocks,
    png_bytes,
    render_grey,
    write_pgm,
)
from pg_pipeline_documents.ocr.reading_order import (
    affordable_rects,
    columns_in_reading_order,
    text_segments,
)
from pg_pipeline_documents.ocr.tesseract import load_tesseract
from pg_pipeline_documents.ocr.text_layer import text_layer_layout

# PDFium's FPDF_GetLastError() codes (fpdfview.h) that the load step distinguishes.
_FPDF_ERR_SUCCESS = 0
_FPDF_ERR_PASSWORD = 4
_FPDF_ERR_SECURITY = 5


def _open_document(pdfium: Any, path: str) -> tuple[Any, dict[str, Any] | None]:
    try:
        return pdfium.PdfDocument(path), None
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code == _FPDF_ERR_PASSWORD:
            reason = "password"
        elif code == _FPDF_ERR_SECURITY:
            reason = "security"
        elif code == _FPDF_ERR_SUCCESS:
            # pypdfium2 treats a document that loads with a page count < 1 as a load failure;
            # PDFium's last error is then still "success".
            reason = "no_pages"
        else:
            reason = "damaged"
        return None, failure("load", str(exc), reason=reason)


#: Most pages whose text layer ``info`` reads for its sample.
_SAMPLE_PAGES = 10


def op_info(pdfium: Any, request: dict[str, Any]) -> OpResult:
    """The page count, and with ``sample_chars`` up to that much of the first pages' text
    layer (what tells the document's language)."""
    doc, refusal = _open_document(pdfium, request["pdf"])
    if refusal is not None:
        return refusal, None
    try:
        result: dict[str, Any] = {"ok": True, "page_count": len(doc)}
        wanted = int(request.get("sample_chars", 0))
        if wanted > 0:
            sample = ""
            with contextlib.suppress(Exception):  # a sample is a hint, never a failure
                for index in range(min(len(doc), _SAMPLE_PAGES)):
                    textpage = doc[index].get_textpage()
                    sample += _normalize(textpage.get_text_range()) + "\n"
                    textpage.close()
                    if len(sample) >= wanted:
                        break
            result["text_sample"] = sample[:wanted]
        return result, None
    finally:
        doc.close()


def op_page(pdfium: Any, request: dict[str, Any]) -> OpResult:
    workdir = Path(request["workdir"])
    page_index = int(request["page_index"])
    layout = bool(request.get("layout"))
    doc, refusal = _open_document(pdfium, request["pdf"])
    if refusal is not None:
        return refusal, None
    page_count = len(doc)
    if not 0 <= page_index < page_count:
        message = f"the document has {page_count} pages"
        return failure("page_range", message, page_count=page_count), None
    page = doc[page_index]
    textpage = page.get_textpage()
    text = _normalize(textpage.get_text_range())
    with contextlib.suppress(Exception):  # reading order is an improvement, never a failure
        if textpage.count_rects() <= affordable_rects(textpage):  # else PDFium's order
            ordered = columns_in_reading_order(text_segments(textpage), page.get_width())
            if ordered is not None:
                text = _normalize(ordered)
    if sum(not c.isspace() for c in text) >= int(request["min_text_chars"]):
        result = {"ok": True, "method": "text_layer", "text": text}
        if layout:
            with contextlib.suppress(Exception):  # the layout is an addition, never a failure
                result["layout"] = text_layer_layout(page, textpage)
        textpage.close()
        return result, None
    textpage.close()
    width_pt, height_pt = page.get_size()
    if not (width_pt > 0 and height_pt > 0):
        return failure("document", f"the page has no area ({width_pt} x {height_pt} pt)"), None
    library = request.get("tesseract_library")
    tesseract = request.get("tesseract")
    if not library and not tesseract:
        raise SetupError("tesseract binary not found on PATH")
    requested_dpi = int(request["dpi"])
    dpi = fit_dpi(width_pt, height_pt, requested_dpi, int(request["max_pixels"]))
    blank_below = int(request.get("blank_below", 0))
    band = request.get("band")
    if band is not None:  # a first look at part of the page (its language): no layout of it
        top, bottom = (min(max(float(edge), 0.0), 1.0) for edge in band)
        layout = False
        grey = render_grey(page, dpi, crop=(0, height_pt * (1 - bottom), 0, height_pt * top))
    else:
        grey = render_grey(page, dpi)
    try:
        ink = ink_blocks(grey, dpi) if blank_below > 0 else None
        if ink is not None and ink < blank_below:  # nothing to read: no tesseract, no image file
            blank = {"ok": True, "method": "blank", "ink": ink, "dpi": dpi}
            if layout:
                blank["layout"] = {"width": width_pt, "height": height_pt, "spans": []}
            return blank, None
        rendered = {
            "ok": True,
            "stage": "tesseract",
            "dpi": dpi,
            "requested_dpi": requested_dpi,
            # What the parent needs to place the tesseract command's words (its TSV output).
            "page_size": [width_pt, height_pt],
        }
        if library:
            engine = load_tesseract(str(library)).engine(str(request["lang"]))
            engine.set_image(grey)
        else:
            image = workdir / "page.pgm"
            write_pgm(grey, image)
    finally:
        grey.close()
    if not library:
        # tesseract IMAGE OUTBASE writes OUTBASE.txt and OUTBASE.tsv in one recognition pass.
        # No --dpi: tesseract's own estimate from the text size read the samples with a lower
        # error rate and ~10% faster than being told the render resolution.
        argv = [str(tesseract), str(image), str(workdir / "ocr")]
        argv += ["-l", str(request["lang"]), "txt", "tsv"]
        return rendered, argv
    # The engine holds its own copy of the pixels: PDFium's share of memory goes first.
    page.close()
    doc.close()
    # Should tesseract crash or be killed, the parent knows it happened while it read the page.
    write_result(workdir, rendered)
    read = engine.recognize(with_words=layout)
    if read is None:
        return failure("tesseract", "tesseract could not recognise the page"), None
    result = {**rendered, "method": "ocr", "text": read.text, "confidence": read.confidence}
    if layout:  # the parent makes the layout of them, as it does of the command's TSV
        result["words"] = [word.as_list() for word in read.words[:MAX_WORDS]]
    return result, None


def _normalize(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").strip()


#: Most pixels a region is drawn in: a band of a page at screen resolution, not a scan.
REGION_MAX_PIXELS = 1_000_000


def op_region(pdfium: Any, request: dict[str, Any]) -> OpResult:
    """Part of a page, ``box`` (x0, y0, x1, y1 in points from the page's top-left corner as
    displayed), drawn at ``dpi`` in grey as PNG bytes (base64), with ``mark`` (a box in the same
    points) outlined."""
    import base64

    doc, refusal = _open_document(pdfium, request["pdf"])
    if refusal is not None:
        return refusal, None
    try:
        page_index = int(request["page_index"])
        if not 0 <= page_index < len(doc):
            message = f"the document has {len(doc)} pages"
            return failure("page_range", message, page_count=len(doc)), None
        page = doc[page_index]
        width_pt, height_pt = page.get_size()
        x0, y0, x1, y1 = (float(v) for v in request["box"])
        x0, x1 = max(0.0, min(x0, width_pt)), max(0.0, min(x1, width_pt))
        y0, y1 = max(0.0, min(y0, height_pt)), max(0.0, min(y1, height_pt))
        if not (x1 - x0 >= 1 and y1 - y0 >= 1):
            return failure("document", "the region is outside the page"), None
        dpi = fit_dpi(x1 - x0, y1 - y0, int(request["dpi"]), REGION_MAX_PIXELS)
        grey = render_grey(page, dpi, crop=(x0, height_pt - y1, width_pt - x1, y0))
        try:
            mark = request.get("mark")
            scale = dpi / 72
            outline = None
            if mark is not None:
                m0, n0, m1, n1 = (float(v) for v in mark)
                outline = (
                    round((m0 - x0) * scale),
                    round((n0 - y0) * scale),
                    round((m1 - x0) * scale),
                    round((n1 - y0) * scale),
                )
            png = png_bytes(grey, outline)
        finally:
            grey.close()
        return {"ok": True, "png": base64.b64encode(png).decode("ascii"), "dpi": dpi}, None
    finally:
        doc.close()
