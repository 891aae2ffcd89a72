"""Which fields a review asks about, how its settings are read, and what a correction keeps."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from pg_pipeline_documents.review import (
    ReviewSettings,
    corrections,
    needs_review,
    review_detail,
    review_enabled,
    review_settings,
    snippet,
)
from pg_pipeline_documents.tender import FieldEvidence, TenderExtraction, TenderFields


def extraction(**evidence: FieldEvidence) -> TenderExtraction:
    return TenderExtraction(
        title="Road resurfacing 2027",
        reference="WB-PW-2027-014",
        estimated_value=Decimal("1250000.00"),
        currency="EUR",
        evidence={
            "title": FieldEvidence(
                confidence=0.9, rule="heading", source="Road resurfacing 2027", page=1
            ),
            "reference": FieldEvidence(
                confidence=0.6, rule="label", source="Ref: WB-PW-2027-014", page=2
            ),
            "estimated_value": FieldEvidence(confidence=0.95, rule="label", page=1),
            "currency": FieldEvidence(confidence=0.95, rule="label", page=1),
            **evidence,
        },
    )


def test_a_value_below_its_threshold_and_a_left_out_candidate_are_reviewed() -> None:
    found = extraction(
        contact_email=FieldEvidence(
            confidence=0.3, rule="label", source="Mail: x@y", rejected="x@y", page=1
        )
    )
    flagged = needs_review(found, ReviewSettings(threshold=0.75))
    assert list(flagged) == ["reference", "contact_email"]
    assert "0.60, below 0.75" in flagged["reference"]
    assert "left out" in flagged["contact_email"]


def test_a_sure_document_needs_no_review_and_per_field_thresholds_win() -> None:
    assert needs_review(extraction(), ReviewSettings(threshold=0.5)) == {}
    flagged = needs_review(extraction(), ReviewSettings(threshold=0.5, thresholds={"title": 0.95}))
    assert list(flagged) == ["title"]


def test_a_required_field_without_a_value_is_reviewed_whatever_the_confidences() -> None:
    flagged = needs_review(
        extraction(), ReviewSettings(threshold=0.0, required=["submission_deadline", "title"])
    )
    assert flagged == {"submission_deadline": "required, and no value was read"}
    # Nothing read and not required: no one is asked to read the whole document for it.
    assert "issuing_authority" not in needs_review(extraction(), ReviewSettings(threshold=1.0))


def test_settings_come_from_the_environment_and_a_wrong_one_names_its_variable() -> None:
    settings = review_settings(
        {
            "PIPELINE_REVIEW_THRESHOLD": "0.8",
            "PIPELINE_REVIEW_THRESHOLDS": "currency=0.5, title=0.95",
            "PIPELINE_REVIEW_REQUIRED": "title,submission_deadline",
            "PIPELINE_REVIEW_TIMEOUT": "2h",
        }
    )
    assert settings == ReviewSettings(
        threshold=0.8,
        thresholds={"currency": 0.5, "title": 0.95},
        required=["title", "submission_deadline"],
        timeout_s=7200.0,
    )
    assert review_settings({}) == ReviewSettings()
    for env, named in [
        ({"PIPELINE_REVIEW_THRESHOLD": "high"}, "PIPELINE_REVIEW_THRESHOLD"),
        ({"PIPELINE_REVIEW_THRESHOLD": "1.5"}, "PIPELINE_REVIEW_THRESHOLD"),
        ({"PIPELINE_REVIEW_THRESHOLDS": "curency=0.5"}, "PIPELINE_REVIEW_THRESHOLDS"),
        ({"PIPELINE_REVIEW_THRESHOLDS": "currency"}, "PIPELINE_REVIEW_THRESHOLDS"),
        ({"PIPELINE_REVIEW_REQUIRED": "deadline"}, "PIPELINE_REVIEW_REQUIRED"),
        ({"PIPELINE_REVIEW_TIMEOUT": "forever"}, "PIPELINE_REVIEW_TIMEOUT"),
        ({"PIPELINE_REVIEW": "maybe"}, "PIPELINE_REVIEW"),
    ]:
        with pytest.raises(RuntimeError, match=named):
            review_settings(env)


def test_review_is_off_unless_the_submitter_or_the_workers_turn_it_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PIPELINE_REVIEW", raising=False)
    assert review_enabled(None) is False
    assert review_enabled(True) is True
    monkeypatch.setenv("PIPELINE_REVIEW", "on")
    assert review_enabled(None) is True
    assert review_enabled(False) is False  # `pipeline submit` without --review says so


def test_a_correction_is_a_label_and_an_equal_value_is_not() -> None:
    found = extraction()
    reviewed = TenderFields.model_validate(
        {
            **found.fields().model_dump(mode="json"),
            "reference": "WB-PW-2027-041",
            "estimated_value": "1250000",  # the same amount, written otherwise
        }
    )
    [label] = corrections(found, reviewed)
    assert label.model_dump() == {
        "field": "reference",
        "extracted": "WB-PW-2027-014",
        "corrected": "WB-PW-2027-041",
        "evidence": "Ref: WB-PW-2027-014",
        "confidence": 0.6,
        "page": 2,
        "rejected": None,
    }
    assert corrections(found, found.fields()) == []


def test_the_snippet_is_the_page_text_around_the_line_the_value_was_read_from() -> None:
    pages = [
        "Notice\nRoad resurfacing 2027\nCity of Westbrook",
        "a\nb\nc\nRef: WB-PW-2027-014\nd\ne\nf",
    ]
    ev = FieldEvidence(confidence=0.6, rule="label", source="ref: wb-pw-2027-014", page=2)
    assert snippet(pages, ev) == "b\nc\nRef: WB-PW-2027-014\nd\ne"
    assert snippet(pages, FieldEvidence(confidence=0.6, rule="x", source="nowhere at all")) is None


def test_the_detail_flags_fields_and_carries_their_evidence() -> None:
    found = extraction()
    pages = ["Road resurfacing 2027", "Ref: WB-PW-2027-014"]
    detail = review_detail(found, pages, {"reference": "why"}, filename="a.pdf")
    assert detail["title"] == "a.pdf" and detail["flagged"] == ["reference"]
    assert detail["fields"]["reference"] == {
        "needs_review": True,
        "why": "why",
        "confidence": 0.6,
        "rule": "label",
        "evidence": "Ref: WB-PW-2027-014",
        "page": 2,
        "snippet": "Ref: WB-PW-2027-014",
    }
    assert detail["fields"]["lots"] == {"needs_review": False}


def test_the_picture_is_the_band_of_the_page_around_the_line_read_from() -> None:
    from pg_pipeline_documents.layout import PageLayout, Span
    from pg_pipeline_documents.review import evidence_region

    spans = [
        Span(text="Notice", x0=50, y0=50, x1=120, y1=62),
        Span(text="Reference:", x0=50, y0=300, x1=110, y1=310),
        Span(text="WB-PW-2027-014", x0=200, y0=300, x1=290, y1=310),
    ]
    layouts = [None, PageLayout(width=600, height=800, spans=spans)]
    ev = FieldEvidence(confidence=0.6, rule="label", source="reference: wb-pw-2027-014", page=2)
    assert evidence_region(layouts, ev) == (1, (0.0, 270.0, 600, 340.0), (50, 300, 290, 310))
    assert evidence_region([None, None], ev) is None  # no layout: no picture


def test_a_region_of_a_sample_page_is_drawn_as_a_small_png() -> None:
    import io
    from pathlib import Path

    from PIL import Image

    from pg_pipeline_documents.ocr_engine import page_region

    png = page_region(
        Path(__file__).parents[3] / "sample_docs" / "tender.pdf",
        0,
        (0, 140, 612, 200),
        mark=(60, 155, 230, 168),
    )
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) < 30_000
    image = Image.open(io.BytesIO(png))
    # An A4 page is 595 points wide: the band stops at its edge. 100 dpi.
    assert image.mode == "L" and image.size == (827, 83)
    assert image.getpixel((round((60 - 3) * 100 / 72) + 1, 40)) == 0  # the outline


def test_pipeline_toml_holds_the_settings_and_a_variable_wins_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_CONFIG", raising=False)
    (tmp_path / "pipeline.toml").write_text(
        'apps = ["documents"]\n\n[documents.review]\nenabled = true\nthreshold = 0.8\n'
        'thresholds = { currency = 0.5 }\nrequired = ["title"]\ntimeout = "2d"\n'
    )
    assert review_enabled(None, {}) is True
    assert review_enabled(None, {"PIPELINE_REVIEW": "off"}) is False
    assert review_settings({}) == ReviewSettings(
        threshold=0.8, thresholds={"currency": 0.5}, required=["title"], timeout_s=2 * 86_400.0
    )
    assert review_settings({"PIPELINE_REVIEW_THRESHOLD": "0.6"}).threshold == 0.6


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ("threshhold = 0.8", r"unknown setting\(s\) threshhold"),
        ("threshold = 2", r"pipeline.toml \[documents.review\]: threshold"),
        ('required = ["deadline"]', "deadline"),
        ('timeout = "soon"', "not a duration"),
        ('enabled = "perhaps"', "must be on or off"),
    ],
)
def test_a_wrong_setting_in_pipeline_toml_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str, named: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_CONFIG", raising=False)
    (tmp_path / "pipeline.toml").write_text(f"[documents.review]\n{table}\n")
    with pytest.raises(RuntimeError, match=named) as caught:
        review_settings({})
    assert "pipeline.toml" in str(caught.value)
