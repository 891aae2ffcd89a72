"""The measures behind the README's OCR quality table."""

from __future__ import annotations

import pytest

from benchmarks.ocr_quality import cer, missed_fields


def test_cer_counts_edits_over_the_reference_length() -> None:
    assert cer("Tender notlce", "Tender notice") == pytest.approx(1 / 13)
    assert cer("", "abcd") == 1.0
    assert cer("abcd", "abcd") == 0.0


def test_cer_ignores_layout_whitespace() -> None:
    assert cer("Lot 1:\n\n  Daily   cleaning", "Lot 1: Daily cleaning") == 0.0
    assert cer("Lot1: Daily cleaning", "Lot 1: Daily cleaning") == pytest.approx(1 / 21)


def test_missed_fields_compares_each_expected_value_exactly() -> None:
    expected = {"reference": "WB-PW-2027-014", "currency": "EUR", "lots": [{"number": 1}]}
    found = {"reference": "WB-PW-2027-014", "currency": "GBP", "lots": [{"number": 1}]}
    assert missed_fields(found, expected) == ["currency"]
    assert missed_fields({}, expected) == ["reference", "currency", "lots"]
