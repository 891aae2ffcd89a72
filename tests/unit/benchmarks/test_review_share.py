"""The review benchmark's table: documents that would wait, fields asked, bad values caught."""

from __future__ import annotations

from benchmarks.review_share import table
from pg_pipeline_documents.tender import FieldEvidence, TenderExtraction


def test_the_table_counts_waiting_documents_asked_fields_and_caught_bad_values() -> None:
    unsure = TenderExtraction(
        reference="X-1",
        title="Roads",
        evidence={
            "reference": FieldEvidence(confidence=0.6, rule="label"),
            "title": FieldEvidence(confidence=0.95, rule="label"),
        },
    )
    sure = TenderExtraction(
        title="Bridges",
        currency="EUR",
        evidence={"title": FieldEvidence(confidence=0.95, rule="x")},
    )
    scored = [
        ("a.pdf", unsure, {"reference": "wrong", "title": "right", "currency": "missing"}),
        ("b.pdf", sure, {"title": "right"}),
    ]

    text = table([("docs", scored)], [0.5, 0.75], ["currency"])

    assert "| 0.5 | 1/2 / 1 / 1/2 |" in text  # only currency, required and missing, is asked
    assert "| 0.75 | 1/2 / 2 / 2/2 |" in text
