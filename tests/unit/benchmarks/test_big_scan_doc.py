"""The generated long scan that `benchmarks.big_scan` sends through the pipeline."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pypdfium2 as pdfium

from benchmarks.big_scan_doc import make_big_scan, plan


def test_the_plan_has_every_kind_of_page_and_is_the_same_for_the_same_seed() -> None:
    kinds = plan(400, 11)

    assert kinds == plan(400, 11)
    assert kinds != plan(400, 12)
    layouts = {k.layout for k in kinds}
    assert layouts == {"notice", "prose", "columns", "table", "form", "blank", "text_layer"}
    assert kinds[0].layout == "notice"
    assert 10 <= sum(k.layout == "blank" for k in kinds) <= 40
    assert sum(k.layout == "text_layer" for k in kinds) == 4
    assert {k.dpi for k in kinds if k.dpi is not None} == {200, 250, 300}
    assert any(k.bilevel for k in kinds) and not all(k.bilevel for k in kinds)


def test_the_document_has_scans_without_text_and_annexes_with_it(tmp_path: Path) -> None:
    first, second = tmp_path / "a.pdf", tmp_path / "b.pdf"
    kinds = make_big_scan(first, pages=12, seed=3)
    make_big_scan(second, pages=12, seed=3)

    assert (
        hashlib.sha256(first.read_bytes()).digest() == hashlib.sha256(second.read_bytes()).digest()
    )
    doc = pdfium.PdfDocument(first)
    try:
        assert len(doc) == 12
        for kind in kinds:
            page = doc[kind.number - 1]
            text = page.get_textpage().get_text_range().strip()
            assert bool(text) == (kind.layout == "text_layer"), kind
            assert [round(v) for v in page.get_size()] == [595, 842]
    finally:
        doc.close()
