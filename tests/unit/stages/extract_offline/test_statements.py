"""What a dossier says of itself in sentences: the buyer two kinds of statement agree on, the
title an invitation to tender gives, and a buyer's name printed beside the title."""

from __future__ import annotations

import pytest

from pg_pipeline_documents.extract_offline import extract_offline_explained
from pg_pipeline_documents.extract_offline.names import split_buyer_from_title
from pg_pipeline_documents.extract_offline.statements import (
    buyer_from_statements,
    title_from_invitation,
)

_DOSSIER = """TENDER DOCUMENT
NOTICE INVITING TENDER
Sealed tenders are invited by the PORT AUTHORITY OF WESTHAVEN for the
maintenance dredging of the inner harbour basin, Westhaven.
Tenders shall reach the office before the date stated in the schedule.
General conditions
1. "PAW" shall mean the Port Authority of Westhaven, Harbour House, Quay Road.
2. The Contractor shall keep the site clean.
Articles of Agreement made between the Port Authority of Westhaven (the Employer) and the
Contractor named below.
Signed for and on behalf of the Contractor
"""


def test_the_buyer_is_the_body_statements_of_different_kinds_agree_on() -> None:
    name, ev = buyer_from_statements(_DOSSIER.splitlines())
    assert name is not None and ev is not None
    assert name.casefold() == "port authority of westhaven"
    assert ev.confidence >= 0.6 and "invitation" in ev.rule and "defined" in ev.rule


@pytest.mark.parametrize(
    "text",
    [
        "The Eastmoor Water Board invites sealed bids for the supply of water meters.\n"
        "This Request for Quotation is issued by the Eastmoor Water Board.",
        "This contract is made between the Eastmoor Water Board, hereinafter referred to as the"
        ' "Employer", and the Contractor.\nFor and on behalf of the Eastmoor Water Board',
    ],
)
def test_an_invitation_an_issuer_or_a_defined_party_are_statements_too(text: str) -> None:
    name, _ev = buyer_from_statements(text.splitlines())
    assert name is not None and name.casefold() == "eastmoor water board"


@pytest.mark.parametrize(
    "text",
    [
        # One statement only: an agent, a signatory or a sample contract's party may be meant.
        "Sealed tenders are invited by the Port Authority of Westhaven for dredging works.",
        # Two kinds, but naming whoever answers the tender, not a body.
        "Bids are invited by M/s Harbour Contractors for piling.\n"
        "For and on behalf of M/s Harbour Contractors",
        # Two bodies, each named by two kinds: which one buys is a guess.
        "Tenders are invited by Westhaven Council for paving.\n"
        "On behalf of Westhaven Council\n"
        "Tenders are invited by Eastmoor Water Board for pipes.\n"
        "On behalf of Eastmoor Water Board",
        # "BW" is not the initials of the name it is said to mean.
        'Tenders are invited by Westhaven Council for paving.\n"BW" shall mean Westhaven Council',
    ],
)
def test_no_buyer_without_two_kinds_of_statement_naming_one_body(text: str) -> None:
    assert buyer_from_statements(text.splitlines()) == (None, None)


@pytest.mark.parametrize(
    ("line", "title"),
    [
        (
            "Online bids are invited for and on behalf of the President of India for "
            "Construction of a boundary wall at the depot.",
            "Construction of a boundary wall at the depot",
        ),
        (
            "Quotations are invited for supply of water meters as per the specifications given.",
            "supply of water meters",
        ),
    ],
)
def test_the_invitation_names_the_purchase_without_whom_for_or_how(line: str, title: str) -> None:
    assert title_from_invitation([line])[0] == title


def test_the_invitation_says_what_the_tenders_are_for_across_line_breaks() -> None:
    title, ev = title_from_invitation(_DOSSIER.splitlines())
    assert title == "maintenance dredging of the inner harbour basin, Westhaven"
    assert ev is not None and ev.line == 2


@pytest.mark.parametrize(
    "line",
    [
        "Quotations are invited for the items listed in the schedule below.",
        "Tenders are invited for the following works:",
        "Bids are invited for a period of two years.",
    ],
)
def test_an_invitation_for_a_list_or_a_period_gives_no_title(line: str) -> None:
    assert title_from_invitation([line]) == (None, None)


def test_a_dossier_without_labels_gets_its_buyer_and_title_from_its_sentences() -> None:
    got = extract_offline_explained(_DOSSIER)
    assert got.issuing_authority is not None
    assert got.issuing_authority.casefold() == "port authority of westhaven"
    assert got.title == "maintenance dredging of the inner harbour basin, Westhaven"


@pytest.mark.parametrize(
    ("title", "authority", "expected"),
    [
        (
            "London Borough of Northgate - Delivery of a Waste Transfer Station",
            "London Borough of Northgate (LBN)",
            ("Delivery of a Waste Transfer Station", "London Borough of Northgate"),
        ),
        (
            "School transport services | Westshire County Council",
            "Westshire County Council",
            ("School transport services", "Westshire County Council"),
        ),
        (
            # Not the authority's name as read elsewhere, but a body's all the same.
            "Northgate Council - Delivery of a Waste Transfer Station",
            "London Borough of Northgate",
            ("Delivery of a Waste Transfer Station", "Northgate Council"),
        ),
        (
            "Westshire County Council \u2013 Supply of road salt",
            None,
            ("Supply of road salt", "Westshire County Council"),
        ),
    ],
)
def test_a_title_printed_with_its_buyers_name_is_split(
    title: str, authority: str | None, expected: tuple[str, str]
) -> None:
    assert split_buyer_from_title(title, authority) == expected


@pytest.mark.parametrize(
    ("title", "authority"),
    [
        ("Resurfacing of roads - Lot 2", "Westshire County Council"),
        ("Council Offices - Refurbishment", "Westshire County Council"),
        ("Highways - Lot 2 resurfacing", None),  # no public body on either side
        ("Market Hall - Roof repair works", None),
    ],
)
def test_a_title_with_a_dash_of_its_own_is_left_whole(title: str, authority: str | None) -> None:
    assert split_buyer_from_title(title, authority) is None
