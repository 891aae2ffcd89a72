"""Notice formats read as structures (TED by section numbers, BOAMP by headings), and the
general capabilities they rely on: e-mail addresses whose "@" is a picture, ordinals in dates,
clause numbers that are no amounts, and a document's kind that is no title."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal

from pg_pipeline_documents.extract_offline import extract_offline_explained
from pg_pipeline_documents.extract_offline.amounts import _amounts
from pg_pipeline_documents.extract_offline.codes import restore_missing_at, restore_missing_at_lines
from pg_pipeline_documents.extract_offline.dates import _parse_deadline
from pg_pipeline_documents.extract_offline.fields import _not_a_title
from pg_pipeline_documents.extract_offline.forms import read_form
from pg_pipeline_documents.layout import PageLayout, Span
from pg_pipeline_documents.tender import Lot

TED_GERMAN = """\
Auftragsbekanntmachung
Abschnitt I: Öffentlicher Auftraggeber
I.1) Name und Adressen
Offizielle Bezeichnung: Gemeinde Lindenberg
Postanschrift: Marktplatz 3
E-Mail: rathaus@lindenberg.example
I.4) Art des öffentlichen Auftraggebers
Regional- oder Kommunalbehörde
Abschnitt II: Gegenstand
II.1.1) Bezeichnung des Auftrags:
Erneuerung der Straßenbeleuchtung
im Ortsteil Nord
Referenznummer der Bekanntmachung: LB-2027-14
II.1.2) CPV-Code Hauptteil
34993000
II.1.5) Geschätzter Gesamtwert
Wert ohne MwSt.: 250 000.00 EUR
II.2) Beschreibung
II.2.1) Bezeichnung des Auftrags:
Leuchten
Los-Nr.: 1
II.2.2) Weitere(r) CPV-Code(s)
31527260
II.2.6) Geschätzter Wert
Wert ohne MwSt.: 200 000.00 EUR
II.2.1) Bezeichnung des Auftrags:
Wartung
Los-Nr.: 2
II.2.6) Geschätzter Wert
Wert ohne MwSt.: 50 000.00 EUR
Abschnitt IV: Verfahren
IV.2.2) Schlusstermin für den Eingang der Angebote oder Teilnahmeanträge
Tag: 04/03/2027
Ortszeit: 10:30
IV.2.7) Bedingungen für die Öffnung der Angebote
Tag: 04/03/2027
Ortszeit: 11:00
"""


def test_a_ted_form_is_read_by_its_section_numbers() -> None:
    got = extract_offline_explained(TED_GERMAN)
    assert got.issuing_authority == "Gemeinde Lindenberg"  # not I.4's kind of buyer
    assert got.title == "Erneuerung der Straßenbeleuchtung im Ortsteil Nord"
    assert got.reference == "LB-2027-14"
    assert got.submission_deadline == datetime(2027, 3, 4, 10, 30)
    assert got.estimated_value == Decimal("250000.00") and got.currency == "EUR"
    assert got.cpv_codes == ["34993000", "31527260"]
    assert got.lots == [
        Lot(number=1, title="Leuchten", estimated_value=Decimal("200000.00")),
        Lot(number=2, title="Wartung", estimated_value=Decimal("50000.00")),
    ]
    assert got.contact_email == "rathaus@lindenberg.example"
    assert got.evidence["title"].rule == "TED section II.1.1"
    assert got.evidence["title"].confidence >= 0.9


def test_a_ted_form_without_a_value_or_reference_states_none() -> None:
    text = TED_GERMAN.replace("Referenznummer der Bekanntmachung: LB-2027-14\n", "")
    text = text.replace("II.1.5) Geschätzter Gesamtwert\nWert ohne MwSt.: 250 000.00 EUR\n", "")
    # A number elsewhere that looks like a reference or an amount is not taken instead.
    text += "VI.3) Zusätzliche Angaben\nAktenzeichen der Plattform: 619060\nUmsatz: 900 000 EUR\n"
    got = extract_offline_explained(text)
    assert got.reference is None
    assert got.estimated_value is None and got.currency is None


def test_joint_buyers_in_a_ted_form_give_the_first_buyer_and_its_address() -> None:
    text = """\
I.1) Name and addresses
Official name: Northshore Housing Association
E-mail: info@northshore.example
Official name: Southvale Homes
E-mail: enquiries@southvale.example
II.1.1) Title:
Kitchen replacement framework
II.1.2) Main CPV code
45000000
II.1.5) Estimated total value
Value excluding VAT: 3 000 000.00 GBP
IV.2.2) Time limit for receipt of tenders or requests to participate
Date: 08/05/2027
Local time: 12:00
"""
    got = extract_offline_explained(text)
    assert got.issuing_authority == "Northshore Housing Association"
    assert got.contact_email == "info@northshore.example"
    assert got.submission_deadline == datetime(2027, 5, 8, 12, 0)


def test_a_ted_form_printed_one_section_a_line_is_read_too() -> None:
    text = """\
I.1) Name and addresses Official name: Ville de Clairval
Town: Clairval
E-mail: achats@clairval.example
II.1.1) Title: Supply of road salt Reference number: CLV/ACH/12
II.1.2) Main CPV code: 34927100 Road salt
II.1.5) Estimated total value: Value excluding VAT: 652 000.00 Currency: EUR
II.2.1) Title: Road salt Lot No: 1
II.2.6) Estimated value: Value excluding VAT: 507 111.00 Currency: EUR
II.2.1) Title: Liquid de-icing agents Lot No: 2
II.2.6) Estimated value: Value excluding VAT: 144 889.00 Currency: EUR
IV.2.2) Time limit for receipt of tenders: Date: 17/01/2027 Local time: 11:00
"""
    got = extract_offline_explained(text)
    assert got.issuing_authority == "Ville de Clairval"
    assert got.title == "Supply of road salt"
    assert got.reference == "CLV/ACH/12"
    assert got.estimated_value == Decimal("652000.00") and got.currency == "EUR"
    assert [(lot.number, lot.title) for lot in got.lots] == [
        (1, "Road salt"),
        (2, "Liquid de-icing agents"),
    ]
    assert got.submission_deadline == datetime(2027, 1, 17, 11, 0)


BOAMP = """\
Avis d'appel public à la concurrence
Annonce No 27-12345
- Nom et adresse officiels de l'organisme acheteur : Commune de Valbonne-sur-Lys.
Correspondant : M. le maire, 2 place de la Mairie 59000 Valbonne, tél. : 03-00-00-00-00,
courriel : marches valbonne.example adresse internet : http://www.valbonne.example .
Objet du marché : entretien des espaces verts de la commune et des
abords des écoles.
CPV - Objet principal : 77310000
Objets supplémentaires : 77311000
77313000.
Prestations divisées en lots : oui.
Cautionnement et garanties exigés : retenue de garantie de 5 %.
Date limite de réception des offres : 1.e.r mars 2027, à 12 heures.
Numéro de référence attribué au marché par le pouvoir adjudicateur / l'entité adjudicatrice :
2027-EV-03.
Instance chargée des procédures de recours : Tribunal administratif,
courriel : greffe tribunal.example.
Renseignements relatifs aux lots :
Lot(s) Tonte. -
Lot(s) Taille des haies et
arbustes. -
"""


def test_a_boamp_avis_is_read_by_its_headings() -> None:
    got = extract_offline_explained(BOAMP)
    assert got.issuing_authority == "Commune de Valbonne-sur-Lys"
    # A BOAMP title opens in lower case: that is how the avis prints it, not a cut line.
    assert got.title == "entretien des espaces verts de la commune et des abords des écoles"
    assert got.reference == "2027-EV-03"
    assert got.submission_deadline == datetime(2027, 3, 1, 12, 0)
    assert got.cpv_codes == ["77310000", "77311000", "77313000"]
    assert got.contact_email == "marches@valbonne.example"
    # Lots named without numbers are numbered in their order.
    assert [(lot.number, lot.title) for lot in got.lots] == [
        (1, "Tonte"),
        (2, "Taille des haies et arbustes"),
    ]
    assert got.estimated_value is None  # no heading states one; 5 % is no amount


def test_a_document_that_is_no_known_form_is_read_by_the_general_rules() -> None:
    assert (
        read_form(["Invitation to tender", "Title: Road works", "Closing date: 1 May 2027"]) is None
    )


def test_an_address_after_an_email_label_gets_back_the_at_sign_drawn_as_a_picture() -> None:
    assert restore_missing_at("courriel : achat.public ville-x.fr.") == (
        "courriel : achat.public@ville-x.fr."
    )
    assert restore_missing_at("E-mail: tenders county.gov.uk") == "E-mail: tenders@county.gov.uk"
    # Without the label, two words and a domain stay as they are.
    assert restore_missing_at("see our site www.x.fr") == "see our site www.x.fr"
    assert restore_missing_at("E-mail: voir le règlement") == "E-mail: voir le règlement"
    assert restore_missing_at("E-mail: a@b.example") == "E-mail: a@b.example"


def test_french_ordinal_days_are_read_whatever_the_superscript_became() -> None:
    for printed in ("1er mars 2027 à 12 heures", "1.e.r mars 2027, à 12 heures", "1 er mars 2027"):
        got = _parse_deadline(printed)
        assert got is not None and (got.month, got.day) == (3, 1), printed
    assert _parse_deadline("1.e.r mars 2027, à 12 heures") == datetime(2027, 3, 1, 12, 0)


def test_a_rule_cited_by_its_number_is_no_amount() -> None:
    got = _amounts("Pursuant to FAR 8.405-3(a)(4), the value is $100 million")
    assert [a.value for a in got] == [Decimal("100000000")]
    assert [a.value for a in _amounts("article R2122-7 and clause 12.500")] == []
    assert [a.value for a in _amounts("Estimated value: 12.500 EUR")] == [Decimal("12500")]


def test_a_value_label_followed_by_prose_takes_the_amount_with_a_currency() -> None:
    text = (
        "5.3 Estimated values\n"
        "Pursuant to FAR 8.405-3(a)(4), at the time of award, the Government estimates the total\n"
        "three year value of the agreement to be $25 million.\n"
    )
    got = extract_offline_explained(text)
    assert got.estimated_value == Decimal("25000000") and got.currency == "USD"


def test_the_kind_of_document_is_never_its_title() -> None:
    got = extract_offline_explained(
        "City of Eastbrook\nSubject: Request for Quotation (RFQ)\nClosing date: 3 May 2027\n"
    )
    assert got.title is None
    assert got.evidence["title"].rejected == "Request for Quotation (RFQ)"


def test_a_support_desk_is_no_contact_even_when_its_name_is_inside_the_mailbox() -> None:
    got = extract_offline_explained(
        "Questions may be sent by email to aasbs.helpdesk@agency.example\n"
    )
    assert got.contact_email is None


# --- layouts: headings, cells -----------------------------------------------------------------


def _span(text: str, x: float, y: float, size: float = 9, bold: bool = False) -> Span:
    return Span(
        text=text, x0=x, y0=y, x1=x + len(text) * size * 0.5, y1=y + size, size=size, bold=bold
    )


def test_the_title_is_the_largest_heading_that_names_what_is_bought() -> None:
    spans = [
        _span("City of Eastbrook", 200, 40, 18, True),
        _span("Supply and installation of LED street lighting", 80, 140, 16, True),
        _span("RFP No. EB-2027-031", 80, 180, 10),
        *(_span(f"Body text line {n} of the invitation.", 60, 220 + 12 * n, 10) for n in range(20)),
    ]
    text = "\n".join(s.text for s in spans)
    got = extract_offline_explained([text], [PageLayout(width=612, height=792, spans=spans)])
    assert got.title == "Supply and installation of LED street lighting"
    assert got.evidence["title"].rule == "largest heading of the first pages"


def test_a_heading_nothing_vouches_for_is_only_a_candidate() -> None:
    spans = [
        _span("Northgate Campus", 150, 80, 24, True),
        *(_span(f"Body text line {n} of the document.", 60, 220 + 12 * n, 10) for n in range(20)),
    ]
    text = "\n".join(s.text for s in spans)
    got = extract_offline_explained([text], [PageLayout(width=612, height=792, spans=spans)])
    assert got.title is None
    assert got.evidence["title"].rejected == "Northgate Campus"


def test_form_boxes_give_the_value_under_their_label() -> None:
    spans = [
        _span("SOLICITATION/CONTRACT/ORDER FOR COMMERCIAL ITEMS", 50, 20, 10, True),
        _span("2. CONTRACT NO.", 20, 60),
        _span("5. SOLICITATION NUMBER", 200, 60),
        _span("6. SOLICITATION ISSUE DATE", 380, 60),
        _span("W912DY27R0001", 205, 72),
        _span("02/01/2027", 385, 72),
        _span("8. OFFER DUE DATE/LOCAL TIME", 380, 100),
        _span("03/04/2027 1400 CST", 385, 112),
        _span("9. ISSUED BY", 20, 140),
        _span("CODE", 150, 140),
        _span("W912DY", 200, 140),
        _span("US ARMY ENGINEERING AND SUPPORT CENTER", 25, 152),
    ]
    text = "\n".join(s.text for s in spans)
    got = extract_offline_explained([text], [PageLayout(width=612, height=792, spans=spans)])
    assert got.reference == "W912DY27R0001"
    assert got.issuing_authority == "US ARMY ENGINEERING AND SUPPORT CENTER"
    # A U.S. form's dates are month first; the time is the form's 24-hour clock.
    assert got.submission_deadline == datetime(
        2027, 3, 4, 14, 0, tzinfo=timezone(-timedelta(hours=6))
    )


def test_a_gem_bid_is_read_by_its_key_value_table_even_as_plain_text() -> None:
    text = "\n".join(
        [
            "Government e Marketplace",
            "Bid Details/बिड विवरण",
            "Bid End Date/Time/बिड बंद होने की तारीख/समय 21-03-2027 15:00:00",
            "Bid Opening Date/Time/बिड खोलने की तारीख/समय 21-03-2027 15:30:00",
            "Organisation Name/संगठन का नाम Indian Army",
            "Item Category/मद केटेगरी Office Chair (V3) (Q2)",
            "Estimated Bid Value/अनुमानित बिड मूल्य 5,00,000",
            "EMD Amount/ईएमडी राशि 10000",
            "Bid Number: GEM/2027/B/1234567",
        ]
    )
    got = extract_offline_explained(text)
    assert got.reference == "GEM/2027/B/1234567"
    assert got.submission_deadline == datetime(2027, 3, 21, 15, 0)
    assert got.issuing_authority == "Indian Army"
    assert got.estimated_value == Decimal("500000") and got.currency == "INR"
    # The item category stands for the title, and is believed less than a labelled title.
    assert got.title == "Office Chair (V3) (Q2)"
    assert got.evidence["title"].confidence < got.evidence["reference"].confidence


def test_times_as_forms_print_them_are_kept_with_their_date() -> None:
    assert _parse_deadline("15 March 2027, 1700 hrs") == datetime(2027, 3, 15, 17, 0)
    assert _parse_deadline("BEFORE 3:00 P.M. on March 2, 2027") == datetime(2027, 3, 2, 15, 0)
    assert _parse_deadline("10 May 2027, 12:00 pm") == datetime(2027, 5, 10, 12, 0)


def test_indian_digit_grouping_and_rupees_are_amounts() -> None:
    got = _amounts("Estimated value: Rs. 1,23,45,678.50 and ₹ 5,00,000")
    assert [(a.value, a.currency) for a in got] == [
        (Decimal("12345678.50"), "INR"),
        (Decimal("500000"), "INR"),
    ]


# --- precision gates --------------------------------------------------------------------------


def test_a_clause_number_is_no_reference() -> None:
    got = extract_offline_explained("Reference: 3.2.1\nTitle: Road resurfacing programme\n")
    assert got.reference is None


def test_table_headers_and_contents_lines_are_no_titles() -> None:
    assert _not_a_title("Description Quantity Unit Price") is not None
    assert _not_a_title("Instructions to Tenderers") is not None
    assert _not_a_title("Scope of works ........ 12") is not None
    assert _not_a_title("Section 3 - Specification") is not None
    assert _not_a_title("Resurfacing of the A38 between Ashby and Hilton") is None


def test_insurance_cover_and_securities_are_no_estimate() -> None:
    for line in (
        "Value of professional indemnity insurance: GBP 5,000,000",
        "Estimated value of the bid security: EUR 50,000",
        "Contract value: not less than £2,000,000 per claim",
    ):
        assert extract_offline_explained(line).estimated_value is None, line


def test_a_designers_address_is_not_the_buyers_contact() -> None:
    text = "Architect: Smith Partners, e-mail: studio@smith-architects.example\n"
    assert extract_offline_explained(text).contact_email is None


def test_a_long_dossier_takes_fields_from_its_first_pages_and_believes_later_ones_less() -> None:
    pages = ["Closing date: 3 May 2027 at 12:00\n"] + [f"Clause {n} text.\n" for n in range(12)]
    pages.append("Deadline for receipt of tenders: 9 June 2027\nReference: ABC-2027-99\n")
    got = extract_offline_explained(pages)
    assert got.submission_deadline == datetime(2027, 5, 3, 12, 0)  # the first pages' date
    assert got.reference == "ABC-2027-99"
    assert "past the first pages" in got.evidence["reference"].rule
    assert got.evidence["reference"].confidence < 0.9


def test_a_running_header_beside_the_reference_names_the_document() -> None:
    body = [f"Clause {n}. The contractor shall comply with the requirements.\n" for n in range(4)]
    pages = ["Solicitation Number: RFQ-2027-0042\nBackground text of the request.\n"] + [
        f"RFQ-2027-0042 - Grounds Maintenance Services\n{text}Page {n + 2} of 6\n"
        for n, text in enumerate(body)
    ]
    got = extract_offline_explained(pages)
    assert got.reference == "RFQ-2027-0042"
    assert got.title == "Grounds Maintenance Services"
    assert got.evidence["title"].rule == "running header beside the reference"


def test_an_address_block_under_a_technical_contacts_label_is_not_the_buyers() -> None:
    text = (
        "Adresse auprès de laquelle des renseignements d'ordre technique peuvent être obtenus :\n"
        "12, rue des Lilas, 84120 Pertuis, tél. : 06-00-00-00-00, courriel : atelier@ar.example\n"
        "Correspondant : Mme Durand, courriel : marches@commune.example\n"
    )
    assert extract_offline_explained(text).contact_email == "marches@commune.example"


def test_a_boamp_avis_not_divided_into_lots_has_none() -> None:
    text = BOAMP.replace(
        "Prestations divisées en lots : oui.", "Prestations divisées en lots : non."
    )
    assert extract_offline_explained(text).lots == []


def test_a_ted_section_number_ocr_read_as_digits_is_still_its_section() -> None:
    text = TED_GERMAN.replace("II.1.2) CPV-Code Hauptteil", "11.1.2) CPV-Code Hauptteil")
    assert extract_offline_explained(text).cpv_codes == ["34993000", "31527260"]


def test_a_title_that_opens_with_ref_is_no_reference_label() -> None:
    got = extract_offline_explained("Title: Refurbishment of the Leisure Centre changing rooms\n")
    assert got.title == "Refurbishment of the Leisure Centre changing rooms"
    assert (
        extract_offline_explained("Refuse collection 2027 and street cleansing\n").reference is None
    )


def test_the_line_under_a_notice_heading_is_the_title_when_it_names_a_purchase() -> None:
    head = "Borough of Westvale\nINVITATION TO TENDER\n"
    got = extract_offline_explained(head + "Refurbishment of the Leisure Centre changing rooms\n")
    assert got.title == "Refurbishment of the Leisure Centre changing rooms"
    got = extract_offline_explained(head + "Westvale Leisure Centre and Gardens\n")
    assert got.title is None
    assert got.evidence["title"].rejected == "Westvale Leisure Centre and Gardens"


def test_an_address_wrapped_under_its_email_label_gets_back_its_at_sign_too() -> None:
    assert restore_missing_at_lines(
        ["Correspondant : Mme Martin, tél. : 01-00-00-00-00, courriel :", "c.martin ville.example"]
    )[1] == ("c.martin@ville.example")
    # A line under no e-mail label keeps its words as printed.
    assert restore_missing_at_lines(["Adresse internet :", "voir www.ville.example"])[1] == (
        "voir www.ville.example"
    )


def test_the_buyers_address_wrapped_under_its_label_beats_a_later_one_in_running_text() -> None:
    text = BOAMP.replace(
        "courriel : marches valbonne.example adresse internet",
        "courriel :\nmarches valbonne.example adresse internet",
    ).replace(
        "Cautionnement et garanties exigés : retenue de garantie de 5 %.",
        "Capacité technique : pour l'habilitation, courriel:habilitation defense.example.",
    )
    assert extract_offline_explained(text).contact_email == "marches@valbonne.example"


def test_a_boamp_lot_whose_title_is_printed_under_its_number() -> None:
    lots = BOAMP.split("Lot(s) Tonte. -")[0] + (
        "Lot(s) 1. -\nVéhicule utilitaire électrique, 2 places\n"
        "Durée : 120 jours à compter de la notification.\n"
        "Lot(s) 2. -\nFourgon tôlé rallongé - PTAC\n3.5 T - 3 places\nDurée : 90 jours.\n"
    )
    got = extract_offline_explained(lots)
    assert [(lot.number, lot.title) for lot in got.lots] == [
        (1, "Véhicule utilitaire électrique, 2 places"),
        (2, "Fourgon tôlé rallongé - PTAC 3.5 T - 3 places"),
    ]
    # A number whose title cannot be read makes the list incomplete: none is given.
    cut = BOAMP.split("Lot(s) Tonte. -")[0] + "Lot(s) 1. -\nDurée : 120 jours.\nLot(s) 2. - x\n"
    assert extract_offline_explained(cut).lots == []


def test_a_sectioned_french_avis_with_a_two_digit_year_and_its_cpv_under_a_heading() -> None:
    text = (
        "Avis de marché\n"
        "Section 1 : Identification de l'acheteur\n"
        "Nom complet de l'acheteur : Commune de Valbonne-sur-Lys\n"
        "Section 2 : Communication\n"
        "Identifiant interne de la consultation : 2027-VOI-05\n"
        "Adresse mail du contact : marches@valbonne.example\n"
        "Section 3 : Procédure\n"
        "Date et heure limite de réception des plis : 15/06/27 à 12h00\n"
        "Section 4 : Identification du marché\n"
        "Intitulé du marché : Réfection de la voirie communale\n"
        "Code CPV principal\n"
        "Descripteur principal : 45233140\n"
        "Valeur estimée (H.T.) : 180 000 euros\n"
    )
    got = extract_offline_explained(text)
    assert got.submission_deadline == datetime(2027, 6, 15, 12, 0)
    assert got.cpv_codes == ["45233140"]
    assert got.title == "Réfection de la voirie communale"
    assert got.reference == "2027-VOI-05"


def test_a_two_digit_year_is_read_only_between_slashes() -> None:
    assert _parse_deadline("15/06/27 à 12h00") == datetime(2027, 6, 15, 12, 0)
    # Dots make section numbers ("5.1.12"), not dates.
    assert _parse_deadline("5.1.12 Terms of procurement") is None
    # A phone number's digits under a CPV heading are no code when a code is not 8 digits.
    assert extract_offline_explained("Code CPV\nTéléphone : 04 90 00 00 00\n").cpv_codes == []
