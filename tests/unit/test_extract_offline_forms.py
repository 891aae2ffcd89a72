"""Notice formats read as structures (TED by section numbers, BOAMP by headings), and the
general capabilities they rely on: e-mail addresses whose "@" is a picture, ordinals in dates,
clause numbers that are no amounts, and a document's kind that is no title."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from stages.extract_offline import extract_offline_explained
from stages.extract_offline.amounts import _amounts
from stages.extract_offline.codes import restore_missing_at
from stages.extract_offline.dates import _parse_deadline
from stages.extract_offline.forms import read_form
from stages.tender import Lot

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
