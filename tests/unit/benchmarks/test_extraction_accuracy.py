"""The accuracy benchmark's bookkeeping: which real documents are held out, and how confidence
bands and CPV stems are counted."""

from __future__ import annotations

from benchmarks.extraction_accuracy import band, confidence_table, same_codes
from benchmarks.extraction_realworld import family, held_out


def test_every_third_document_of_each_family_is_held_out_by_name() -> None:
    names = [f"boamp_fr_{c}.pdf" for c in "abcdefgh"] + ["ted_de_x.pdf", "ted_de_y.pdf"]
    names += ["us_rfq.pdf", "in_tender.pdf", "kz_tender.pdf"]
    assert family("ted_de_x.pdf") == "ted_de" and family("us_rfq.pdf") == "other"
    assert held_out(names) == {
        "boamp_fr_a.pdf",
        "boamp_fr_d.pdf",
        "boamp_fr_g.pdf",
        "ted_de_x.pdf",
        "in_tender.pdf",
    }


def test_a_stem_counts_as_the_code_it_is_the_stem_of_and_a_wrong_digit_does_not() -> None:
    assert same_codes(["45000000", "71320000-9"], ["45000000-7", "71320000-7"]) == [
        "45000000-7",
        "71320000-9",
    ]


def test_confidence_bands_count_right_and_wrong_values() -> None:
    assert band(0.95) == "high (>= 0.9)" and band(0.6) == "0.5-0.75"
    table = confidence_table([("docs", [("right", 0.95), ("wrong", 0.95), ("right", 0.6)])])
    assert "| high (>= 0.9) | 1 / 1 (50.0% right) |" in table
    assert "| 0.5-0.75 | 1 / 0 (100.0% right) |" in table


def test_reviewed_documents_score_the_extractor_against_what_the_reviewer_said() -> None:
    from benchmarks.extraction_accuracy import ReviewedDocument, labels_report, score_reviewed
    from pg_pipeline_documents.tender import TenderFields

    reviewed = ReviewedDocument(
        document=7,
        pages=["Ref: A-1"],
        layouts=[None],
        fields=TenderFields(reference="A-2", currency="EUR"),
        corrected=frozenset({"reference"}),
    )

    def extractor(pages: list[str], layouts: list[object]) -> TenderFields:
        assert pages == ["Ref: A-1"]
        return TenderFields(reference="A-1")

    verdicts = {v.field: v for v in score_reviewed([reviewed], extractor)}
    assert verdicts["reference"].labelled and verdicts["reference"].outcome == "wrong"
    assert not verdicts["currency"].labelled and verdicts["currency"].outcome == "missing"
    assert verdicts["title"].outcome == "right"
    report = labels_report(list(verdicts.values()))
    assert "1 reviewed document(s), 1 label(s)" in report
    assert "| reference | 0/1 (0%) / 1/1 (100%) / 0/1 (0%) |" in report
