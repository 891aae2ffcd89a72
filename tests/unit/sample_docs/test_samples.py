"""The committed sample tenders agree with their ground truth (no database, no OCR)."""

from __future__ import annotations

import json
import re
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
import pytest

from pg_pipeline_documents.tender import TenderFields
from tests.support.paths import REPO

SAMPLES = REPO / "sample_docs"
TRUTH = SAMPLES / "ground_truth"

# name -> (dpi of the page images, bits per pixel); None for pages that keep their text layer
EXPECTED: dict[str, list[tuple[int, int] | None]] = {
    "tender.pdf": [None, None],
    "scanned_gray_200dpi.pdf": [(200, 8), (200, 8)],
    "scanned_1bit_300dpi.pdf": [(300, 1), (300, 1), (300, 1)],
    "scanned_poor_150dpi_skewed.pdf": [(150, 8), (150, 8)],
    "mixed.pdf": [None, (200, 8), (200, 8)],
}


def truth(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((TRUTH / name).with_suffix(".json").read_text("utf-8"))
    return data


def normalised_lines(text: str) -> list[str]:
    lines = (" ".join(line.split()) for line in text.splitlines())
    return [line for line in lines if line]


def page_texts(name: str) -> list[str]:
    doc = pdfium.PdfDocument(SAMPLES / name)
    try:
        texts = []
        for index in range(len(doc)):
            textpage = doc[index].get_textpage()
            texts.append(str(textpage.get_text_range()))
        return texts
    finally:
        doc.close()


def test_every_pdf_is_expected_and_has_ground_truth() -> None:
    assert sorted(p.name for p in SAMPLES.glob("*.pdf")) == sorted(EXPECTED)
    assert sorted(p.name for p in TRUTH.glob("*.json")) == sorted(
        name.replace(".pdf", ".json") for name in EXPECTED
    )


def test_samples_stay_small() -> None:
    total = sum(p.stat().st_size for p in SAMPLES.glob("*.pdf"))
    assert total < 4 * 1024 * 1024


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_pdf_opens_with_the_ground_truth_page_count(name: str) -> None:
    doc = pdfium.PdfDocument(SAMPLES / name)
    try:
        assert len(doc) == len(truth(name)["pages"]) == len(EXPECTED[name])
    finally:
        doc.close()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_xref_offsets_point_at_their_objects(name: str) -> None:
    data = (SAMPLES / name).read_bytes()
    start = int(re.findall(rb"startxref\s+(\d+)", data)[-1])
    head = re.match(rb"xref\s+0 (\d+)\s+", data[start:])
    assert head is not None
    entries = re.findall(rb"(\d{10}) (\d{5}) ([nf]) ?\r?\n", data[start + head.end() :])
    assert len(entries) == int(head.group(1))
    for number, (offset, _, kind) in enumerate(entries):
        if kind == b"n":
            assert data[int(offset) :].startswith(f"{number} 0 obj".encode())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ground_truth_fields_are_tender_fields(name: str) -> None:
    fields = truth(name)["fields"]
    model = TenderFields.model_validate(fields)
    assert model.model_dump(mode="json") == fields  # nothing dropped or coerced on the way
    assert model.submission_deadline is not None
    assert model.submission_deadline.utcoffset() is not None
    assert model.lots and model.cpv_codes and model.contact_email
    assert sum(lot.estimated_value or 0 for lot in model.lots) == model.estimated_value
    for code in model.cpv_codes:
        assert re.fullmatch(r"\d{8}-\d", code)
        weights = (3, 7, 1, 3, 7, 1, 3, 7)
        assert sum(int(d) * w for d, w in zip(code[:8], weights, strict=True)) % 10 == int(code[9])


def test_sample_tenders_are_different() -> None:
    references = {truth(name)["fields"]["reference"] for name in EXPECTED}
    assert len(references) == len(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_text_layer_matches_ground_truth_where_there_is_one(name: str) -> None:
    expected_pages = truth(name)["pages"]
    for index, (text, scan) in enumerate(zip(page_texts(name), EXPECTED[name], strict=True)):
        if scan is None:
            assert normalised_lines(text) == normalised_lines(expected_pages[index])
        else:
            assert text.strip() == "", f"page {index + 1} of {name} should be image only"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_scanned_pages_are_one_full_page_image_at_the_stated_resolution(name: str) -> None:
    doc = pdfium.PdfDocument(SAMPLES / name)
    try:
        for index, scan in enumerate(EXPECTED[name]):
            page = doc[index]
            images = list(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE]))
            if scan is None:
                assert images == []
                continue
            dpi, bits = scan
            assert len(images) == 1
            meta = images[0].get_metadata()
            assert meta.horizontal_dpi == pytest.approx(dpi, abs=1)
            assert meta.vertical_dpi == pytest.approx(dpi, abs=1)
            assert meta.bits_per_pixel == bits
            width, height = images[0].get_px_size()
            assert width == pytest.approx(page.get_width() * dpi / 72, abs=1)
            assert height == pytest.approx(page.get_height() * dpi / 72, abs=1)
    finally:
        doc.close()
