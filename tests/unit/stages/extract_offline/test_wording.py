"""The offline extractor on wording and layouts that vary: synonyms, separators, table cells,
page furniture and distractors (the rules behind the corpus' "varied" split)."""
# ruff: noqa: RUF001  (Cyrillic words are data here, not look-alikes)

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest

from pg_pipeline_documents.extract_offline import extract_offline, extract_offline_explained
from pg_pipeline_documents.extract_offline.amounts import _amounts
from pg_pipeline_documents.extract_offline.codes import _email, _reference
from pg_pipeline_documents.extract_offline.dates import _parse_deadline
from pg_pipeline_documents.extract_offline.furniture import strip_furniture
from pg_pipeline_documents.extract_offline.lines import _cell_wrapped
from pg_pipeline_documents.extract_offline.names import _plausible_title
from pg_pipeline_documents.tender import Lot

# --- page furniture --------------------------------------------------------------------------


def test_a_header_repeated_on_every_page_is_blanked_but_repeated_prose_is_not() -> None:
    header = "Procurement Portal of the Region of Valmont"
    body = ["Contract notice", "Official name: A", "Same prose.", "Title: B", "Reference: C"]
    pages = [[header, *body, "- 1 -"], [header, "Lot 1: D", "Same prose.", "E", "F", "p. 2"]]
    got = strip_furniture(pages)
    assert got[0][0] == got[1][0] == got[0][-1] == got[1][-1] == ""
    assert got[0][3] == got[1][2] == "Same prose."  # repeated, but not at a page's edge
    assert got[0][1] == "Contract notice" and got[1][1] == "Lot 1: D"


def test_one_text_is_cut_into_pages_at_its_page_numbers() -> None:
    text = ["Portal X", "Buyer: A", "Page 1 of 2", "Portal X", "Title: B", "Page 2 of 2"]
    assert [line for page in strip_furniture([text]) for line in page] == [
        "",
        "Buyer: A",
        "",
        "",
        "Title: B",
        "",
    ]


def test_a_portal_header_on_every_page_is_not_the_authority() -> None:
    header = "Department for Public Procurement Services - eTendering"
    pages = [
        f"{header}\nINVITATION FOR BIDS\nPublication number: 2026/S 181-437554\nPage 1 of 2",
        f"{header}\nPurchaser City of Silver Lake\n42 High Street\nPage 2 of 2",
    ]
    got = extract_offline_explained(pages)
    assert got.issuing_authority == "City of Silver Lake"
    assert got.evidence["issuing_authority"].rule == "label without a separator"


# --- labels ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("Object of the contract: Supply of road salt", "Supply of road salt"),
        ("Subject - Dredging of navigation channels", "Dredging of navigation channels"),
        ("Project: Solar Photovoltaic Systems", "Solar Photovoltaic Systems"),
        ("Gegenstand der Leistung: Neubau einer Grundschule", "Neubau einer Grundschule"),
        ("Objet de la consultation : Aménagement d'une voie verte", "Aménagement d'une voie verte"),
        ("Titel Neubau einer dreizügigen Grundschule", "Neubau einer dreizügigen Grundschule"),
        ("Objet Travaux de renouvellement des réseaux", "Travaux de renouvellement des réseaux"),
    ],
)
def test_title_labels_with_any_separator_or_a_table_cell(line: str, title: str) -> None:
    assert extract_offline(line).title == title


def test_a_label_ends_at_a_word_end_and_prose_is_not_a_label() -> None:
    got = extract_offline("Name of the contracting authority: Municipality of Korvala\n")
    assert got.title is None and got.issuing_authority == "Municipality of Korvala"
    assert extract_offline("Project management services are required for the works.").title is None


def test_title_under_the_heading_skips_identifiers_and_dates() -> None:
    text = (
        "INVITATION FOR BIDS\nBid No. 26-1234\nOCID - 30b1af06-6cd4-3ee4-f8fe-6ee1ee068308\n"
        "Solar Photovoltaic Systems at Three School Sites\n"
        "Scope: Solar Photovoltaic Systems at Three School Sites, design and installation.\n"
    )
    assert extract_offline(text).title == "Solar Photovoltaic Systems at Three School Sites"
    assert not _plausible_title("Notice ID - 2026/S 185-122636")
    assert not _plausible_title("Date of dispatch of this notice")
    assert _plausible_title("Cleaning services for municipal buildings 2027-2030")


def test_the_value_of_a_label_above_is_not_the_title() -> None:
    text = "Contract notice\none.1) Name and addresses\nWestshire Fire and Rescue Authority\n"
    got = extract_offline(text)
    assert got.title is None and got.issuing_authority == "Westshire Fire and Rescue Authority"


# --- identifiers, values, contacts -------------------------------------------------------------


def test_a_notice_identifier_is_not_the_reference() -> None:
    lines = ["Notice ID - 2026/S 185-122636", "Internal identifier - LAK-2026-516"]
    assert _reference(lines) == "LAK-2026-516"
    assert _reference(["Tender reference 2026/139"]) == "2026/139"  # a table row
    assert _reference(["Az.: 27-6918"]) == "27-6918"


def test_a_gross_or_turnover_amount_under_a_value_label_is_skipped() -> None:
    text = (
        "Gesamtwert brutto: 1.190.000,00 €\nValeur estimée TTC : 9 999 999,00 €\n"
        "Geschätzter Auftragswert: 1.000.000,00 € netto\n"
    )
    got = extract_offline(text)
    assert (got.estimated_value, got.currency) == (Decimal("1000000.00"), "EUR")


def test_a_value_label_with_hors_tva_above_its_amount() -> None:
    got = extract_offline("Valeur estimée hors TVA\n3 616 473,15 € HT\n")
    assert got.estimated_value == Decimal("3616473.15")


@pytest.mark.parametrize(
    ("text", "value", "currency"),
    [
        ("EUR 1.25 million", "1250000", "EUR"),
        ("£450k excl. VAT", "450000", "GBP"),
        ("3,58 million d'euros HT", "3580000", "EUR"),
        ("1,25 Mio. EUR", "1250000", "EUR"),
        ("987 654 euros HT", "987654", "EUR"),
    ],
)
def test_amounts_in_words_and_abbreviations(text: str, value: str, currency: str) -> None:
    assert [(a.value, a.currency) for a in _amounts(text)] == [(Decimal(value), currency)]


def test_the_only_lots_value_is_the_contracts() -> None:
    text = (
        "5.1 Lot: LOT-0001\nTitle: Winter road maintenance services\n"
        "Estimated value excluding VAT: 237 000.00 EUR\n"
    )
    got = extract_offline_explained(text)
    assert got.estimated_value == Decimal("237000.00") and got.currency == "EUR"
    assert got.lots == [
        Lot(
            number=1, title="Winter road maintenance services", estimated_value=Decimal("237000.00")
        )
    ]


def test_contact_email_context_reads_whole_words_and_roles_only() -> None:
    # "court" inside a town's name; a title on the next line names "support" services.
    assert _email("Town: Rivecourt\nE-mail: achats@rivecourt.example\n", None) == (
        "achats@rivecourt.example"
    )
    text = "Email aanbesteding@rws.example\nSubject IT service desk and end-user support services"
    assert _email(text, None) == "aanbesteding@rws.example"
    assert _email("Body responsible for appeal procedures: review@court-1.example", None) is None


# --- deadlines ----------------------------------------------------------------------------------


def test_an_offset_is_not_read_as_the_time_and_is_not_cut_short() -> None:
    got = _parse_deadline("16:00 on Wednesday 16th September 2026 (UTC+01:00)")
    assert got == datetime(2026, 9, 16, 16, 0, tzinfo=timezone(timedelta(hours=1)))
    assert got is not None and got.utcoffset() == timedelta(hours=1)


def test_a_deadline_label_wrapped_in_its_table_cell() -> None:
    lines = ["Date et heure limites de réception des 19 octobre 2026 à 15h00", "offres"]
    assert _cell_wrapped(lines, 0) == ("Date et heure limites de réception des offres", 39)
    got = extract_offline_explained(
        "Date limite de remise des questions : 12/10/2026 à 12:00\n" + "\n".join(lines)
    )
    assert got.submission_deadline == datetime(2026, 10, 19, 15, 0)
    # The words before the break already name the deadline by their roots ("date ... limites"),
    # so that rule reads it before the one that rejoins the cell.
    assert got.evidence["submission_deadline"].rule == "label known by its roots"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Closing date - 04/12/2026 11:00", datetime(2026, 12, 4, 11, 0)),
        ("Tenders must be received by 2026-11-16 12:30", datetime(2026, 11, 16, 12, 30)),
        ("Sealed bids will be received until 2:00 PM, January 24, 2027", datetime(2027, 1, 24, 14)),
        ("Ablauf der Angebotsfrist: 10. Oktober 2026, 10:30 Uhr", datetime(2026, 10, 10, 10, 30)),
        # OCR without German language data reads "für" as "fir".
        (
            "Schlusstermin fir den Eingang der Angebote: 04.02.2027, 16:30",
            datetime(2027, 2, 4, 16, 30),
        ),
        ("Date limite de remise des offres : samedi 14 novembre 2026", datetime(2026, 11, 14)),
    ],
)
def test_deadline_labels_in_several_wordings(text: str, expected: datetime) -> None:
    assert extract_offline(text).submission_deadline == expected


def test_a_lots_gross_value_is_not_its_value() -> None:
    text = (
        "Lot 1: Road salt\nLot value including VAT: EUR 120,000.00\n"
        "Lot value: EUR 100,000.00\nLot 2: Brine\nLot value: EUR 50,000.00\n"
    )
    assert [lot.estimated_value for lot in extract_offline(text).lots] == [
        Decimal("100000.00"),
        Decimal("50000.00"),
    ]


def test_eszett_read_as_b_is_restored_in_german_notices_only() -> None:
    german = (
        "Die Angebote sind bis 12:00 Uhr einzureichen. Der Auftraggeber und die Vergabestelle.\n"
        "Titel: Sanierung der Ortsdurchfahrt HauptstraBe, 2. Bauabschnitt\n"
    )
    assert (
        extract_offline(german).title == "Sanierung der Ortsdurchfahrt Hauptstraße, 2. Bauabschnitt"
    )
    assert extract_offline("Title: Listing on eBay for the city\n").title == (
        "Listing on eBay for the city"
    )


@pytest.mark.parametrize(
    "line",
    [
        "TENDER SUBMISSION BY - 14/05/2027 BEFORE 3:00 P.M.",
        "TENDERSUBMISSION BY - 14/05/2027 BEFORE 3:00 P.M.",  # a text layer lost the space
        "Submission of bids by 14/05/2027 at 15:00",
        "Bid submission upto 14-05-2027 15:00 hrs",
    ],
)
def test_a_deadline_worded_as_the_act_and_what_bounds_it(line: str) -> None:
    opening = "TENDER OPENING - 14/05/2027 at 4:00 P.M."
    text = f"DATE OF ISSUE OF TENDER - 02/05/2027\n{line}\n{opening}\n"
    assert extract_offline(text).submission_deadline == datetime(2027, 5, 14, 15, 0)


def test_a_close_date_and_time() -> None:
    got = extract_offline("Close Date & Time: 12-Apr-2027 2:00 pm (local time)\n")
    assert got.submission_deadline == datetime(2027, 4, 12, 14, 0)


@pytest.mark.parametrize(
    "letterhead",
    [
        "COMMUNAUTÉ D'AGGLOMÉRATION DU PAYS DE MORLAIX",
        "Northbridge Housing Association",
        "Landratsamt Oberwald",
        "Ayuntamiento de Villanueva del Río",
        "Gemeente Waterveld",
        "Urząd Miasta Zielony Bór",
        "Администрация города Северск",
    ],
)
def test_a_letterhead_naming_a_public_body_of_more_kinds(letterhead: str) -> None:
    text = f"{letterhead}\nRÈGLEMENT DE LA CONSULTATION\nObjet : Réfection du gymnase\n"
    assert extract_offline(text).issuing_authority == letterhead


# --- Cyrillic labels -------------------------------------------------------------------------

_RU_NOTICE = """ИЗВЕЩЕНИЕ О ПРОВЕДЕНИИ ОТКРЫТОГО ТЕНДЕРА
Номер извещения: 0373200001224000123
Заказчик: Государственное бюджетное учреждение здравоохранения «Областная больница»
Предмет закупки: Поставка медицинского оборудования для отделения реанимации
Номер закупки: ЗК-2024/17
Начальная (максимальная) цена договора: 4 500 000,00 руб.
Обеспечение заявки: 45 000,00 руб.
Дата и время окончания подачи заявок: 15 марта 2024 г. в 10:00
Дата вскрытия конвертов: 16.03.2024 10:00
"""

_UK_NOTICE = """ОГОЛОШЕННЯ ПРО ПРОВЕДЕННЯ ВІДКРИТИХ ТОРГІВ
Замовник: Виконавчий комітет Броварської міської ради
Предмет закупівлі: Капітальний ремонт покрівлі будівлі школи
Очікувана вартість: 2 750 000,00 грн
Кінцевий строк подання тендерних пропозицій: 12.04.2024 09:00
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            _RU_NOTICE,
            {
                "title": "Поставка медицинского оборудования для отделения реанимации",
                "issuing_authority": "Государственное бюджетное учреждение здравоохранения "
                "«Областная больница»",
                "reference": "ЗК-2024/17",
                "submission_deadline": datetime(2024, 3, 15, 10, 0),
                "estimated_value": Decimal("4500000.00"),
                "currency": "RUB",
            },
        ),
        (
            _UK_NOTICE,
            {
                "title": "Капітальний ремонт покрівлі будівлі школи",
                "issuing_authority": "Виконавчий комітет Броварської міської ради",
                "reference": None,
                "submission_deadline": datetime(2024, 4, 12, 9, 0),
                "estimated_value": Decimal("2750000.00"),
                "currency": "UAH",
            },
        ),
    ],
)
def test_a_notice_in_cyrillic_is_read_by_its_labels(text: str, expected: dict[str, object]) -> None:
    got = extract_offline_explained(text)
    assert got.warnings == []
    for name, value in expected.items():
        assert getattr(got, name) == value, name


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("Обеспечение заявки: 45 000,00 руб.\nГарантия исполнения: 90 000 руб.", "estimated_value"),
        ("Сумма договора с учетом НДС: 1 200 000,00 тенге", "estimated_value"),
        (
            "Дата окончания срока предоставления разъяснений: 10.03.2024 18:00",
            "submission_deadline",
        ),
        ("Номер извещения: 0373200001224000123", "reference"),
        ("Адрес заказчика: г. Алматы, ул. Абая, 10", "issuing_authority"),
    ],
)
def test_cyrillic_labels_of_other_things_give_no_value(text: str, field: str) -> None:
    assert getattr(extract_offline(text), field) is None


def test_a_name_in_capitals_beside_its_label_does_not_take_the_line_below() -> None:
    # Two rows of a table: the buyer's row holds its value, the organiser's is no buyer's name.
    got = extract_offline_explained("Заказчик СЕВЕРТРАНС\nОрганизатор закупок СЕВЕРТРАНС\n")
    assert got.issuing_authority is None


@pytest.mark.parametrize(
    ("line", "name"),
    [
        (
            'Заказчик (наименование): АО "Горводоканал", юридический адрес: Шымкент',
            'АО "Горводоканал"',
        ),
        ("Buyer: Northshire Council, postal address: Market Street", "Northshire Council"),
    ],
)
def test_the_next_label_after_a_buyers_name_ends_the_name(line: str, name: str) -> None:
    assert extract_offline(line).issuing_authority == name


# --- Spanish, Italian, Dutch, Polish and Portuguese labels -----------------------------------

# Notices of our own writing, one per language: their lines and the fields they state.
_MORE_LANGUAGES = json.loads(
    (Path(__file__).parent / "notices_in_more_languages.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("language", sorted(_MORE_LANGUAGES))
def test_a_notice_in_more_languages_is_read_by_its_label_roots(language: str) -> None:
    case = _MORE_LANGUAGES[language]
    got = extract_offline("\n".join(case["text"]))
    assert got.title == case["title"]
    assert got.issuing_authority == case["issuing_authority"]
    assert got.reference == case["reference"]
    assert got.submission_deadline == datetime.fromisoformat(case["submission_deadline"])
    assert got.estimated_value == Decimal(case["estimated_value"])


@pytest.mark.parametrize(
    ("line", "field"),
    [
        # The winner, a security, an amount with VAT or gross, a turnover, safety costs.
        ("Adjudicatario: Limpiezas Martínez Hermanos S.L.", "issuing_authority"),
        ("Garantía provisional: 9.600,00 euros", "estimated_value"),
        ("Presupuesto base de licitación (IVA incluido): 580.800,00 euros", "estimated_value"),
        ("Cauzione provvisoria: € 25.000,00", "estimated_value"),
        ("Importo oneri per la sicurezza: € 15.000,00", "estimated_value"),
        ("Voorwaarden: minimaal EUR 500.000 omzet", "estimated_value"),
        ("Wartość zamówienia brutto: 2 952 000,00 PLN", "estimated_value"),
        # A lot's value is not the contract's.
        ("Geraamde waarde perceel 1: EUR 100.000", "estimated_value"),
        ("Wartość części 1: 50 000,00 PLN", "estimated_value"),
        ("Importo lotto 1: € 500.000,00", "estimated_value"),
        # Openings, validity, publication, clarifications.
        ("Fecha de apertura de ofertas: 20/03/2024 10:00", "submission_deadline"),
        ("Termin związania ofertą: 09.07.2024", "submission_deadline"),
        ("Data di pubblicazione del bando: 01/03/2024", "submission_deadline"),
        ("Richiesta chiarimenti entro: 01/04/2024 ore 12:00", "submission_deadline"),
        ("Scadenza presentazione quesiti: 02/04/2024 ore 12:00", "submission_deadline"),
        ("Importo di aggiudicazione: € 1.180.000,00", "estimated_value"),
        # The buyer's name is no title.
        ("Nazwa zamawiającego: Gmina Zielony Bór", "title"),
    ],
)
def test_labels_of_other_things_in_more_languages_give_no_value(line: str, field: str) -> None:
    assert getattr(extract_offline(line), field) is None
