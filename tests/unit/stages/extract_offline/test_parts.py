"""The offline extractor's parts, one concern at a time, and its evidence and bounds."""
# ruff: noqa: RUF001  (Greek words are data here, not look-alikes)

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from pg_pipeline_documents.extract_offline import extract_offline, extract_offline_explained
from pg_pipeline_documents.extract_offline.amounts import _amounts, _join_split_groups
from pg_pipeline_documents.extract_offline.codes import _cpv_codes, _email
from pg_pipeline_documents.extract_offline.dates import _MONTHS, _parse_deadline
from pg_pipeline_documents.extract_offline.labels import VOCABULARY, any_of, vocabulary
from pg_pipeline_documents.extract_offline.normalise import MAX_LINE_CHARS, _normalise
from pg_pipeline_documents.tender import Lot, TenderExtraction, TenderFields

# --- normalise -------------------------------------------------------------------------------


def test_ocr_misreads_of_roman_section_numbers_are_repaired() -> None:
    assert _normalise("Il.1.1) Title: X\nI|.2.1) Title: Y\n1.1 Buyer") == [
        "II.1.1) Title: X",
        "II.2.1) Title: Y",
        "1.1 Buyer",  # decimal numbering is left alone
    ]


def test_lines_are_cut_at_the_bound() -> None:
    (line,) = _normalise("7" * (MAX_LINE_CHARS * 3))
    assert len(line) == MAX_LINE_CHARS


# --- labels as data --------------------------------------------------------------------------


def test_every_vocabulary_fragment_compiles_and_matches_its_own_example() -> None:
    examples = {
        "deadline": "Schlusstermin für den Eingang der Angebote",
        "not_deadline": "Eröffnungstermin",
        "not_contact": "Instance chargée des procédures de recours",
        "total_value": "Valeur totale estimée hors TVA",
    }
    for field, text in examples.items():
        assert any_of(field).search(text), field
    assert "America/New_York" in VOCABULARY["zones"]
    assert len(vocabulary("deadline")) >= 6


# --- dates -----------------------------------------------------------------------------------


def test_month_names_come_from_cldr_for_several_languages() -> None:
    assert _MONTHS["novembre"] == 11 and _MONTHS["märz"] == 3 and _MONTHS["oktober"] == 10
    assert _MONTHS["sept"] == 9  # English abbreviations stay


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Date: 02/11/2026\nLocal time: 14:00", datetime(2026, 11, 2, 14, 0)),
        ("02.11.2026, 14:00 Uhr", datetime(2026, 11, 2, 14, 0)),
        ("12 novembre 2026 à 12h00", datetime(2026, 11, 12, 12, 0)),
        (
            "02/11/2026 14:00:00 (UTC+01:00)",
            datetime(2026, 11, 2, 14, 0, tzinfo=timezone(timedelta(hours=1))),
        ),
        (
            # The time before the date on its line wins over a time on the next line; the
            # zone named in words is resolved to the offset in force that day (EDT in October).
            "3:00 p.m. Eastern Time on Tuesday, October 6, 2026\nOpened at 10:00 a.m.",
            datetime(2026, 10, 6, 15, 0, tzinfo=timezone(timedelta(hours=-4))),
        ),
        (
            "3:00 p.m. Eastern Time on Tuesday, March 2, 2027",
            datetime(2027, 3, 2, 15, 0, tzinfo=timezone(timedelta(hours=-5))),
        ),
        ("12 noon on Monday 2nd November 2026", datetime(2026, 11, 2, 12, 0)),
    ],
)
def test_deadline_formats(text: str, expected: datetime) -> None:
    got = _parse_deadline(text)
    assert got == expected
    assert (got is not None and got.utcoffset()) == expected.utcoffset()


# --- amounts ---------------------------------------------------------------------------------


def test_amount_formats() -> None:
    assert [(a.value, a.currency) for a in _amounts("1.234.567,89 € netto")] == [
        (Decimal("1234567.89"), "EUR")
    ]
    assert [(a.value, a.currency) for a in _amounts("987 654,00 € HT")] == [
        (Decimal("987654.00"), "EUR")
    ]
    assert _join_split_groups("$1 ,356,000.00") == "$1,356,000.00"


# --- codes -----------------------------------------------------------------------------------


def test_cpv_stems_without_check_digit_are_reported_as_printed_and_only_under_a_cpv_label() -> None:
    text = (
        "II.1.2) Main CPV code\n45214200\nII.1.3) Type of contract\n"
        "Telephone: 45214210\nCPV-Code: 48000000 45262300\nCPV classifications\n"
        "'45331000 - Works\n71320000-9 Engineering design\n"
    )
    assert _cpv_codes(text) == [
        "45214200",
        "48000000",
        "45262300",
        "45331000",
        "71320000",  # a printed check digit the formula disagrees with is not vouched for
    ]


def test_a_cpv_stem_takes_the_check_digit_printed_with_it_elsewhere() -> None:
    assert _cpv_codes("CPV: 45000000\nMain code 45000000-7 Construction work") == ["45000000-7"]


def test_cpv_check_digits_are_kept_as_printed_and_never_computed() -> None:
    # 09310000-5 is the official code although the usual formula gives 9: kept as printed is
    # the stem (its digit cannot be vouched for), and a stem alone never gets a computed digit.
    assert _cpv_codes("CPV: 09310000-5") == ["09310000"]
    assert _cpv_codes("CPV: 45233120-6") == ["45233120-6"]
    assert _cpv_codes("CPV: 45233120") == ["45233120"]


def test_cpv_placeholders_are_not_codes() -> None:
    assert _cpv_codes("CPV: 00000000, 99999999") == []


def test_contact_email_skips_support_noreply_and_review_addresses() -> None:
    text = "\n".join(
        [
            "Technical questions about the platform: support@etendering.example",
            "Automatic notifications are sent from noreply@etendering.example.",
            "Official name: Administrative Court of Lindenau",
            "E-mail: review@court-lindenau.example",
            "Portal helpdesk: desk@portal.example",
            "Contact person: Procurement department",
            "E-mail: vergabe@stadtwerke.example",
        ]
    )
    assert _email(text, None) == "vergabe@stadtwerke.example"
    assert _email("Recours : Tribunal administratif, greffe.ta@juradm.example", None) is None


# --- lots, families --------------------------------------------------------------------------


def test_eforms_lot_blocks() -> None:
    text = (
        "5.1 Lot: LOT-0001\nTitle: Northern district\nEstimated value excluding VAT: "
        "1 200 000.00 Euro\n5.1.9 Selection criteria\nDescription: At least 2 400 000.00 Euro.\n"
        "5.1 Lot: LOT-0002\nTitle: Southern district\nEstimated value excluding VAT: "
        "800 000.00 Euro\n"
    )
    assert extract_offline(text).lots == [
        Lot(number=1, title="Northern district", estimated_value=Decimal("1200000.00")),
        Lot(number=2, title="Southern district", estimated_value=Decimal("800000.00")),
    ]


def test_german_lose_and_french_lot_table() -> None:
    de = "Los 1: Rohbauarbeiten, geschätzter Wert 456.000,00 € netto\n"
    assert extract_offline(de).lots == [
        Lot(number=1, title="Rohbauarbeiten", estimated_value=Decimal("456000.00"))
    ]
    fr = (
        "Lot Intitulé Montant estimé HT\n1 Gros oeuvre 599 402,00 €\n"
        "2 Électricité 685 031,00 €\nConditions de participation\n"
    )
    assert extract_offline(fr).lots == [
        Lot(number=1, title="Gros oeuvre", estimated_value=Decimal("599402.00")),
        Lot(number=2, title="Électricité", estimated_value=Decimal("685031.00")),
    ]


# --- evidence and precision ------------------------------------------------------------------

NOTICE_PAGES = [
    "Contract notice\nSection I: Contracting authority\nOfficial name: Stadtwerke Lindenau GmbH\n"
    "E-mail: vergabe@stadtwerke-lindenau.example\nII.1.1) Title: Renovation of the heating "
    "network\nReference number: LIN-2026-031\nII.1.5) Estimated total value\n"
    "Value excluding VAT: 1 250 000.00\nCurrency: EUR\n",
    "IV.2.2) Time limit for receipt of tenders or requests to participate\nDate: 02/11/2026\n"
    "Local time: 14:00\nIV.2.7) Conditions for opening of tenders\nDate: 02/11/2026\n"
    "Local time: 14:30\n",
]


def test_each_field_has_evidence_with_page_line_and_confidence() -> None:
    got = extract_offline_explained(NOTICE_PAGES)
    assert got.submission_deadline == datetime(2026, 11, 2, 14, 0)  # not the opening's 14:30
    deadline = got.evidence["submission_deadline"]
    assert deadline.page == 2 and deadline.rule == "label" and deadline.confidence >= 0.8
    assert deadline.source is not None and "Local time: 14:00" in deadline.source
    title = got.evidence["title"]
    assert (title.page, title.line) == (1, 5)
    assert title.source == "II.1.1) Title: Renovation of the heating network"
    assert got.evidence["estimated_value"].rule == "total value label"
    assert got.extractor == "offline" and got.warnings == []
    # The plain fields are what the offline extractor always returned.
    assert got.fields() == extract_offline("\n".join(NOTICE_PAGES))
    assert type(got.fields()) is TenderFields


def test_a_value_that_runs_into_another_label_is_rejected_not_returned() -> None:
    # Two columns read across: the authority's name swallowed the title's label.
    text = "Nom complet de l'acheteur : Commune de Intitulé du marché : Réhabilitation du groupe\n"
    got = extract_offline_explained(text)
    assert got.issuing_authority is None
    assert got.evidence["issuing_authority"].rejected is not None
    assert got.evidence["issuing_authority"].note == "the value runs into another label"


def test_a_total_below_its_lots_is_not_trusted() -> None:
    text = (
        "Estimated total value: EUR 100,000.00\nLot 1: Roads EUR 400,000.00\n"
        "Lot 2: Bridges EUR 300,000.00\n"
    )
    got = extract_offline_explained(text)
    assert got.estimated_value is None and got.currency is None
    assert got.evidence["estimated_value"].rejected == "100000.00"
    assert [lot.estimated_value for lot in got.lots] == [Decimal("400000.00"), Decimal("300000.00")]


def test_stored_outputs_without_evidence_still_load() -> None:
    old = TenderFields(title="T").model_dump(mode="json")
    assert TenderExtraction.model_validate(old).fields() == TenderFields(title="T")


# --- bad and pathological input --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "warning"),
    [
        ("", "no text"),
        ("\n\n   \n", "no text"),
        (
            "INVOICE No. 4471\nDate: 03/02/2027\nAmount due: EUR 1,234.00\nThank you for "
            "your business. Payment within 30 days to IBAN DE02 1203 0000 0000 2020 51.",
            "no tender fields",
        ),
        (
            "Προκήρυξη ανοικτού διαγωνισμού για την προμήθεια εξοπλισμού " * 5,
            "not Latin or Cyrillic",
        ),
        ("xq7 zzkf rrtv 'lq ~~kx bbrt qzzx vvkr hhgt ppqr ttrw " * 6, "garbage"),
    ],
)
def test_input_without_tender_fields_gives_nulls_and_a_warning(text: str, warning: str) -> None:
    got = extract_offline_explained(text)
    assert any(warning in w for w in got.warnings), got.warnings
    for name in ("title", "issuing_authority", "submission_deadline", "estimated_value"):
        assert getattr(got, name) is None, name
    assert got.lots == [] and got.cpv_codes == []


@pytest.mark.parametrize(
    "text",
    [
        "1" * 1_000_000,
        "(" * 300_000 + ")" * 300_000,
        "[(" * 300_000,
        "Title: " + "a1," * 300_000,
        "EUR " + "1 " * 500_000,
        "Deadline: " + "12.12.2027 " * 100_000,
        "Lot 1: x EUR 1,000\n" * 60_000,
        "x\n" * 10_000,
        "1\n2\n" * 5_000,
    ],
)
def test_pathological_input_is_bounded(text: str) -> None:
    # CPU time of this process: the bound holds on a loaded machine and still catches a blow-up.
    started = time.process_time()
    extract_offline_explained(text)
    assert time.process_time() - started < 10


def test_a_400_page_dossier_is_read_within_bounds_with_fields_from_its_first_pages() -> None:
    clause = (
        "The contractor shall provide the services described in this section in accordance "
        "with the specification, the programme and the instructions of the contract manager.\n"
    )
    first = (
        "Invitation to Tender\nTitle: Grounds maintenance of parks and open spaces\n"
        "Reference: GM-2027-114\nClosing date: 14 May 2027 at 12:00\n"
    )
    pages = [first] + [f"{n}.1 Clause\n" + clause * 45 for n in range(2, 401)]
    pages[250] += "Deadline for receipt of tenders: 1 June 2027\nReference: OTHER-99\n"
    started = time.process_time()
    got = extract_offline_explained(pages)
    assert time.process_time() - started < 20
    assert got.reference == "GM-2027-114"
    assert got.submission_deadline == datetime(2027, 5, 14, 12, 0)
