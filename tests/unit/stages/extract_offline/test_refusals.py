"""Where the offline extractor refuses to answer: a field it cannot tie to its label for sure is
null, with the rejected candidate and the reason in its evidence (the rules written after the
"unseen7" split's first measurement)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from pg_pipeline_documents.extract_offline import extract_offline, extract_offline_explained
from pg_pipeline_documents.extract_offline.concepts import (
    label_field,
    label_is_ambiguous,
    sentence_tail,
)

# --- deadlines: a label's date is on its own line ---------------------------------------------


def test_a_sentence_holding_deadline_words_takes_no_date_from_the_lines_below() -> None:
    text = (
        "Avis de marché\n"
        "Les offres sont remises par voie électronique. Les offres reçues hors délai ne\n"
        "seront pas examinées.\n"
        "Demandes de précisions jusqu'au 11-01-2027 12h00\n"
    )
    assert extract_offline(text).submission_deadline is None


def test_a_label_known_by_its_roots_reads_the_date_on_its_line_and_a_time_below() -> None:
    got = extract_offline("Einreichungsfrist der Angebote 18.11.2026\n14:00 Uhr\n")
    assert got.submission_deadline == datetime(2026, 11, 18, 14, 0)
    # The next line's own date (another label's) is not this label's time.
    got = extract_offline("Einreichungsfrist der Angebote 18.11.2026\nZuschlag 20.12.2026 11:30\n")
    assert got.submission_deadline == datetime(2026, 11, 18)


def test_a_deadline_label_does_not_run_on_into_another_dates_label() -> None:
    text = "Time limit for receipt of tenders:\nExpected award date: 12/01/2027 10:00\n"
    assert extract_offline(text).submission_deadline is None
    text = "Time limit for receipt of tenders:\nDate: 02/11/2026\nLocal time: 14:00\n"
    assert extract_offline(text).submission_deadline == datetime(2026, 11, 2, 14, 0)


# --- titles under the notice's heading ---------------------------------------------------------


def test_a_labelled_line_under_the_heading_is_not_the_title() -> None:
    text = (
        "Contract notice\nNotice ref.: 2026/S 180-814663\n"
        "Name of buying body - Rijkswaterstaat Oost-Nederland\n40 Civic Centre Road\n"
    )
    got = extract_offline(text)
    assert got.title is None
    assert got.issuing_authority == "Rijkswaterstaat Oost-Nederland"


def test_a_line_further_under_the_heading_needs_to_be_printed_again() -> None:
    head = "Tender notice\nNotice ref.: 2026/S 216-468961\nShort description of the requirement\n"
    got = extract_offline_explained(head + "Provision of community mental health support\n")
    assert got.title is None
    assert got.evidence["title"].rejected == "Short description of the requirement"
    # The line right under the heading is the title when it names a purchase ("Provision of").
    first = "Tender notice\nProvision of community mental health support\nNotice ref.: 2026/S 2\n"
    assert extract_offline(first).title == "Provision of community mental health support"
    again = (
        "Tender notice\nNotice ref.: 2026/S 216-468961\n"
        "Provision of community mental health support\n"
        "What is being procured: Provision of community mental health\nsupport\n"
    )
    got = extract_offline_explained(again)
    assert got.title == "Provision of community mental health support"
    assert got.evidence["title"].rule == "line under the notice heading, printed again"


def test_a_title_that_opens_in_lower_case_is_a_cut_line() -> None:
    text = "Contract notice\nmains in the western zone and the eastern district\n"
    got = extract_offline_explained(text)
    assert got.title is None
    assert "lower case" in (got.evidence["title"].note or "")


def test_one_text_read_as_title_and_authority_is_neither() -> None:
    text = "Contract notice\nContracting authority: Westshire Schools Transport Partnership\n"
    text += "Project: Westshire Schools Transport Partnership\n"
    got = extract_offline_explained(text)
    assert got.title is None and got.issuing_authority is None
    assert got.evidence["title"].note == got.evidence["issuing_authority"].note
    assert "same text" in (got.evidence["title"].note or "")
    # A title may name its buyer.
    text = "Contracting authority: Northshire County Council\n"
    text += "Title: Grounds maintenance for Northshire County Council\n"
    got = extract_offline_explained(text)
    assert got.title == "Grounds maintenance for Northshire County Council"
    assert got.issuing_authority == "Northshire County Council"


# --- labels with two fields' words ---------------------------------------------------------------


def test_a_label_with_a_titles_and_a_buyers_words_names_neither_for_sure() -> None:
    label = "Title attributed to the contract by the contracting authority"
    assert label_is_ambiguous(label) and label_is_ambiguous(label.upper())
    text = f"{label.upper()}: Replacement of water mains\nBUYER REFERENCE: 23-7575\n"
    got = extract_offline_explained(text)
    assert got.issuing_authority is None
    assert got.evidence["issuing_authority"].rejected == "Replacement of water mains"
    # Words that only name what follows them do not make a label ambiguous.
    assert not label_is_ambiguous("Bezeichnung des Auftraggebers")
    assert not label_is_ambiguous("Öffentliche Auftraggeberin (Name)")
    got = extract_offline("Bezeichnung des Auftraggebers | Landkreis Oberwald\n")
    assert got.issuing_authority == "Landkreis Oberwald"


def test_a_label_cell_that_wrapped_does_not_lend_its_rest_to_the_name() -> None:
    text = (
        "Identification de l'organisme qui Département de la Haute-Vienne\n"
        "passe le marché\n"
        "12 rue de la Gare\n"
    )
    assert extract_offline(text).issuing_authority == "Département de la Haute-Vienne"
    # A name that goes on in lower case after a whole label still wraps.
    text = "Organisme public acheteur Communauté de communes du Val\nde Loire et du Cher\n"
    got = extract_offline(text)
    assert got.issuing_authority == "Communauté de communes du Val de Loire et du Cher"


def test_roots_for_more_ways_to_name_a_buyer_and_a_title() -> None:
    assert label_field("Ausschreibendes Amt") == "authority"
    assert label_field("Zuschlagserteilende Stelle") == "authority"
    assert label_field("Identification de l'organisme qui passe le marché") == "authority"
    assert label_field("Libellé de la consultation") == "title"
    assert label_field("Name der Baumaßnahme") == "title"
    # A review body stays no buyer.
    assert label_field("Organisme chargé des procédures de recours") is None


# --- lots ---------------------------------------------------------------------------------------


def test_lots_of_which_only_some_have_a_value_are_not_given() -> None:
    text = (
        "Lot No. 1 - Civil engineering works\n"
        "The works are described in the tender documents.\n"
        "Lot No. 2 - Traffic signal maintenance\n"
        "Estimated value: EUR 2,382,222.00\n"
    )
    got = extract_offline_explained(text)
    assert got.lots == []
    assert "some lots have a value" in (got.evidence["lots"].note or "")
    whole = text.replace("The works are", "Estimated value: EUR 1,191,111.00. The works are")
    lots = extract_offline(whole).lots
    assert [lot.estimated_value for lot in lots] == [Decimal("1191111.00"), Decimal("2382222.00")]
    # No lot with a value at all is a list of lots without values, not an incomplete one.
    bare = "Lot No. 1 - Civil engineering works\nLot No. 2 - Traffic signal maintenance\n"
    assert [lot.title for lot in extract_offline(bare).lots] == [
        "Civil engineering works",
        "Traffic signal maintenance",
    ]


# --- amounts: one amount, two labels -----------------------------------------------------------


def test_an_amount_also_printed_as_a_turnover_is_not_the_estimate() -> None:
    text = "Estimated value: EUR 2,000,000.00\nMinimum annual turnover: EUR 2,000,000.00\n"
    got = extract_offline_explained(text)
    assert got.estimated_value is None and got.currency is None
    assert "turnover" in (got.evidence["estimated_value"].note or "")
    text = "Estimated value: EUR 1,000,000.00\nMinimum annual turnover: EUR 2,000,000.00\n"
    assert extract_offline(text).estimated_value == Decimal("1000000.00")


def test_a_lot_heading_with_its_title_in_brackets() -> None:
    text = (
        "Los 1 (Straßenbau)\nSchätzwert dieses Loses € 3.714.071,00 netto\n"
        "Los 2 (Heizung, Lüftung, Sanitär)\nSchätzwert dieses Loses 2.321.294,00 EUR\n"
    )
    lots = extract_offline(text).lots
    assert [(lot.number, lot.title, lot.estimated_value) for lot in lots] == [
        (1, "Straßenbau", Decimal("3714071.00")),
        (2, "Heizung, Lüftung, Sanitär", Decimal("2321294.00")),
    ]
    # A bracket that is no title (a year, a note that goes on) makes no lot heading.
    assert extract_offline("Lot 2 (2027)\n").lots == []
    assert extract_offline("Lot 3 (see below) and more\n").lots == []


def test_a_title_above_a_line_that_labels_its_own_date() -> None:
    text = (
        "Tender notice\nNotice ref.: 7acc8bb1-38df-d44c-7a8f-3a7f213e4050\n"
        "Provision of community mental health support\nDispatch date 31.12.2026 12:00 hrs\n"
        "Scope: Provision of community mental health support\n"
    )
    assert extract_offline(text).title == "Provision of community mental health support"
    # A short line above a bare date is that date's label, not the title.
    text = "Contract notice\nDate of this notice\n11:00 hours on the 13th day of May 2026\n"
    assert extract_offline(text).title is None


# --- running text is neither a label nor a name ---------------------------------------------------


def test_the_tail_of_a_sentence_is_no_label_over_the_line_below() -> None:
    text = (
        "Tender for office furniture\n"
        "The tenderer shall satisfy himself as to the climatic conditions,\n"
        "local authorities requirement, traffic regulations etc;\n"
        "The tenderer will be fully responsible for considering the financial effect of any\n"
        "or all the factors while submitting his tender.\n"
    )
    got = extract_offline_explained(text)
    assert got.issuing_authority is None
    assert label_field("Contracting authority") == "authority"
    assert sentence_tail("local authorities requirement, traffic regulations etc;")
    # OCR reads a label's colon as a semicolon after a space: still a label.
    assert not sentence_tail("Procurement reference ;")


def test_a_value_that_reads_as_a_sentence_is_no_buyers_name() -> None:
    got = extract_offline_explained("Awarding authority: The bidder will be informed by e-mail\n")
    assert got.issuing_authority is None
    assert got.evidence["issuing_authority"].rejected == "The bidder will be informed by e-mail"
    assert extract_offline("Awarding authority: Port of Westhaven Authority\n").issuing_authority


# --- amounts with their tax, dollars of other countries -------------------------------------


def test_an_amount_printed_with_its_tax_is_not_the_estimate() -> None:
    for printed in ("$1,200,000 (GST inclusive)", "EUR 1 200 000 TTC", "£1,200,000 incl. VAT"):
        got = extract_offline_explained(f"The estimated contract value is {printed}.\n")
        assert got.estimated_value is None, printed
    got = extract_offline_explained("Estimated value: EUR 1 200 000\nGross value: EUR 1 440 000\n")
    assert got.estimated_value == Decimal("1200000")


def test_a_bare_dollar_is_the_us_one_only_where_no_other_dollar_is_named() -> None:
    value = "Estimated contract value: $450,000 excluding taxes.\n"
    assert extract_offline(value + "U.S. Department of Labor\n").currency == "USD"
    assert extract_offline(value + "Government of Canada\n").currency == "CAD"
    assert extract_offline(value + "Australian Capital Territory\n").currency == "AUD"
    # A goods and services tax is no U.S. tax, and says no more which dollar it is.
    got = extract_offline(value + "Prices exclude GST.\n")
    assert got.estimated_value == Decimal("450000") and got.currency is None


# --- bilingual forms ------------------------------------------------------------------------


def test_a_label_followed_by_its_translation_has_its_value_below() -> None:
    text = (
        "Title - Sujet\nJanitorial Services - Federal Building\n"
        "Solicitation No. - N° de l'invitation\nEW482-271234/A\n"
    )
    got = extract_offline(text)
    assert got.title == "Janitorial Services - Federal Building"
    assert got.reference == "EW482-271234/A"
    # A name that holds a label's word is still the value on the label's line.
    got = extract_offline("Buyer: Region Nordvik Health Authority\n7 Civic Centre Road\n")
    assert got.issuing_authority == "Region Nordvik Health Authority"


# --- codes: a telephone number has a CPV code's shape -----------------------------------------


def test_a_telephone_number_shaped_like_a_cpv_code_is_none() -> None:
    text = "Stadt Bad Lindenau\nTelefon: +49 5600 1234-0\nFax: 5600 1234-9\n"
    assert extract_offline(text).cpv_codes == []
    # Under a CPV label, or printed whole with its check digit, a code is still read.
    assert extract_offline("CPV: 9091 1200-8\n9091 1300-9\n").cpv_codes == [
        "90911200-8",
        "90911300-9",
    ]
    assert extract_offline("Leistung: Straßenbau 45233120-6\n").cpv_codes == ["45233120-6"]


# --- e-mail: the buyer's domain before a consultant's ----------------------------------------


def test_the_buyers_address_on_its_own_domain_beats_a_consultants_named_first() -> None:
    text = (
        "NORTHBRIDGE HOUSING ASSOCIATION\nINVITATION TO TENDER\n"
        "1.2 The Employer's agent is Smith & Partners Architects LLP. Queries on the\n"
        "specification may be addressed to John Smith, email: j.smith@smitharchitects.example\n"
        "Procurement contact: procurement@northbridgeha.example\n"
    )
    assert extract_offline(text).contact_email == "procurement@northbridgeha.example"
    # Where no address is on the buyer's domain, the first one that is no one else's stays.
    other = text.replace("northbridgeha.example", "nha-mail.example")
    assert extract_offline(other).contact_email == "j.smith@smitharchitects.example"
