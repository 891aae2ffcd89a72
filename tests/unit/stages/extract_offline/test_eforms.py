"""TED eForms notices read by their numbered sections and their labels in the notice's language."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal

from pg_pipeline_documents.extract_offline import extract_offline_explained
from pg_pipeline_documents.extract_offline.eforms import read_eforms

ENGLISH = """\
Notice publication number: 612345-2027
Contract notice - Standard regime
1. Buyer
1.1. Buyer
Official name: Borough of Eastmere
Legal type of the buyer: Local authority
2. Procedure
2.1. Procedure
Title: Resurfacing of carriageways and footways in the
northern wards
Description: The council procures resurfacing works.
Procedure identifier: 0b6c2f1e-7a4d-4a57-9d55-3c1f0e6b8a21
Internal identifier: EB-HW-2027-014
2.1.1. Purpose
Main nature of the contract: Works
Main classification (cpv): 45233222 Paving and asphalting works
Additional classification (cpv): 45233161 Footpath construction work
2.1.3. Value
Estimated value excluding VAT: 2 400 000,00 Euro
Maximum value of the framework agreement: 3 000 000,00 Euro
5. Lot
5.1. Lot: LOT-0001
Title: Northern carriageways
5.1.1. Purpose
Main classification (cpv): 45233222 Paving and asphalting works
5.1.5. Value
Estimated value excluding VAT: 1 500 000,00 Euro
5.1.9. Selection criteria
Description: Minimum yearly turnover 3 000 000,00 Euro
5.1.12. Terms of procurement
Deadline for receipt of requests to participate: 12/04/2027 12:00:00 (UTC+01:00)
Deadline for receipt of tenders: 19/04/2027 12:00:00 (UTC+01:00)
5.1. Lot: LOT-0002
Title: Northern footways
5.1.5. Value
Estimated value excluding VAT: 900 000,00 Euro
5.1.12. Terms of procurement
Deadline for receipt of tenders: 19/04/2027 12:00:00 (UTC+01:00)
8. Organisations
8.1. ORG-0002
Official name: Eastern Review Tribunal
Email: appeals@tribunal.example
Roles of this organisation:
Review organisation
8.1. ORG-0001
Official name: Borough of Eastmere
Email: procurement@eastmere.example
Roles of this organisation:
Buyer
"""


def test_an_eforms_notice_is_read_by_its_sections() -> None:
    got = extract_offline_explained(ENGLISH)
    assert got.issuing_authority == "Borough of Eastmere"
    # A title that wraps onto the next line is read whole, up to the next label.
    assert got.title == "Resurfacing of carriageways and footways in the northern wards"
    # The internal identifier, not the procedure's UUID nor the publication number.
    assert got.reference == "EB-HW-2027-014"
    # The estimate, not the framework's maximum.
    assert got.estimated_value == Decimal("2400000.00") and got.currency == "EUR"
    assert got.cpv_codes == ["45233222", "45233161"]
    assert [(lot.number, lot.title, lot.estimated_value) for lot in got.lots] == [
        (1, "Northern carriageways", Decimal("1500000.00")),
        (2, "Northern footways", Decimal("900000.00")),
    ]
    # The tenders' deadline, not the one for requests to participate, with its zone.
    assert got.submission_deadline == datetime(
        2027, 4, 19, 12, 0, tzinfo=timezone(timedelta(hours=1))
    )
    # The buyer's address, found by its role, not the review body's listed before it.
    assert got.contact_email == "procurement@eastmere.example"
    assert got.evidence["title"].rule == "eForms section 2.1"
    assert got.evidence["title"].confidence >= 0.9


GERMAN = """\
1. Beschaffer
1.1. Beschaffer
Offizielle Bezeichnung: Stadt Hohenwald
2. Verfahren
2.1. Verfahren
Titel: Neubau einer Kindertagesstätte
Kennung des Verfahrens: 4f1e2d3c-0000-4a4a-8b8b-123456789abc
Interne Kennung: VgV-27-031
2.1.1. Zweck
Haupteinstufung (cpv): 45214100 Bauarbeiten für Kindergärten
5. Los
5.1. Los: LOT-0000
Titel: Neubau einer Kindertagesstätte
5.1.12. Bedingungen für die Auftragsvergabe
Frist für den Eingang der Angebote: 03.05.2027 10:00:00 (UTC+02:00)
8. Organisationen
8.1. ORG-0001
Offizielle Bezeichnung: Stadt Hohenwald
E-Mail: vergabe@hohenwald.example
Rollen dieser Organisation: Beschaffer
"""


def test_a_german_eforms_notice_and_a_procedure_not_divided_into_lots() -> None:
    got = extract_offline_explained(GERMAN)
    assert got.issuing_authority == "Stadt Hohenwald"
    assert got.title == "Neubau einer Kindertagesstätte"
    assert got.reference == "VgV-27-031"
    assert got.cpv_codes == ["45214100"]
    assert got.submission_deadline == datetime(
        2027, 5, 3, 10, 0, tzinfo=timezone(timedelta(hours=2))
    )
    assert got.contact_email == "vergabe@hohenwald.example"
    # LOT-0000 is the one lot of a procedure not divided into lots.
    assert got.lots == []
    # No estimate is printed: the form's place is empty, and no other amount stands in.
    assert got.estimated_value is None


def test_a_french_eforms_notice_printed_short_with_labels_on_the_section_lines() -> None:
    text = (
        "1.1 Acheteur Nom officiel: Commune de Saint-Arlès\n"
        "2.1 Procédure Titre: Fourniture de repas pour la restauration scolaire\n"
        "Identifiant interne: 2027-RS-04\n"
        "Classification principale (cpv): 15894210 Repas pour écoles\n"
        "Valeur estimée hors TVA: 480 000,00 EUR\n"
        "5.1 Lot: LOT-0001\n"
        "Titre: Repas des écoles maternelles\n"
        "Date limite de réception des offres: 07/06/2027 16:00:00 (UTC+02:00)\n"
        "8.1 ORG-0001\n"
        "Nom officiel: Commune de Saint-Arlès\n"
        "Adresse électronique: marches@saint-arles.example\n"
    )
    got = extract_offline_explained(text)
    assert got.title == "Fourniture de repas pour la restauration scolaire"
    assert got.issuing_authority == "Commune de Saint-Arlès"
    assert got.reference == "2027-RS-04"
    assert got.estimated_value == Decimal("480000.00")
    assert got.submission_deadline is not None and got.submission_deadline.day == 7
    # No roles are printed: the organisation named as the buyer gives the contact.
    assert got.contact_email == "marches@saint-arles.example"


def test_numbered_sections_without_eforms_identifiers_are_not_read_as_eforms() -> None:
    text = "1.1 Buyer Official name: X\n2.1 Procedure Title: Y\n5.1 Lot 1: Z\n"
    assert read_eforms(text.splitlines()) is None
    assert read_eforms(ENGLISH.replace("LOT-", "L-").replace("ORG-", "O-").splitlines()) is None


def test_a_lot_whose_title_cannot_be_read_leaves_the_lots_unknown() -> None:
    text = ENGLISH.replace("Title: Northern footways\n", "")
    assert extract_offline_explained(text).lots == []
