"""UK Find a Tender: label above value, GBP with VAT excluded and included, deadlines in words.

``build`` makes the family's notices (``variant`` picks the buyer, title and lot count);
``build_unseen`` its one notice in other wording and layout, written after the rules were
frozen and measured once, to see how the rules carry over to new phrasing.
"""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

from .layout import Doc
from .values import (
    CPV_POOL,
    EN_MONTHS,
    LOT_TITLES_EN,
    WEEKDAYS,
    Spec,
    en_amount,
    ordinal,
    pick_date,
    split_value,
)

UK_BUYERS = [
    ("Northshire County Council", "procurement@northshire.gov.example"),
    ("NHS Lowfield Integrated Care Board", "lowfield.contracts@nhs.example"),
    ("Borough of Eastmere", "tenders@eastmere.gov.example"),
    ("Highlands Water Authority", "commercial@hwa.example"),
    ("University of Kingsbridge", "purchasing@kingsbridge.ac.example"),
]
UK_TITLES = [
    "Home to school transport services",
    "Provision of community mental health support",
    "Highways maintenance term contract 2027 to 2032",
    "Replacement of water mains in the western zone",
    "Student accommodation cleaning services",
]


def build(rng: random.Random, variant: int) -> tuple[Spec, Doc]:
    buyer, email = UK_BUYERS[variant % len(UK_BUYERS)]
    title = UK_TITLES[variant % len(UK_TITLES)]
    n_lots = [2, 0, 3, 0, 2][variant % 5]
    total = Decimal(rng.randrange(200, 5000) * 1000)
    lot_values = split_value(rng, total, n_lots) if n_lots else []
    lot_titles = rng.sample(LOT_TITLES_EN, n_lots)
    cpv = rng.sample(CPV_POOL, 2)
    deadline = pick_date(rng, (12, 17), (0,))
    ref = f"{buyer.split()[0][:4].upper()}-{rng.randrange(1000, 9999)}"
    spec = Spec(
        "uk",
        title,
        buyer,
        ref,
        deadline,
        total.quantize(Decimal("0.01")),
        "GBP",
        cpv,
        list(zip(lot_titles, lot_values, strict=True)),
        email,
    )
    doc = Doc(f"Find a Tender - Notice identifier: 2026/S 000-0{rng.randrange(10000, 99999)}")
    doc.line("Tender notice", "F2")
    doc.line(title, "F2")
    doc.line(buyer)
    doc.above("Notice identifier", f"2026/S 000-0{rng.randrange(10000, 99999)}")
    doc.above("Procurement identifier (OCID)", f"ocds-h6vhtk-0{rng.randrange(10000, 99999):x}")
    doc.above(
        "Published",
        f"{(deadline - timedelta(days=30)).day} "
        f"{EN_MONTHS[(deadline - timedelta(days=30)).month - 1]} 2026, 9:00am",
    )
    doc.line("Scope", "F2")
    doc.above("Reference", ref)
    doc.above("Description", f"{buyer} is seeking suppliers for {title.lower()}.")
    doc.above("Total value (estimated)", f"£{en_amount(total, False)} excluding VAT")
    doc.line(f"£{en_amount(total * Decimal('1.2'), False)} including VAT")
    doc.above("Contract dates (estimated)", "1 April 2027 to 31 March 2030")
    doc.above("Main procurement category", rng.choice(["Services", "Works"]))
    doc.above("CPV classifications", "")
    for stem in cpv:
        doc.line(f"{stem} - {rng.choice(['Works', 'Services', 'Supplies'])}")
    if n_lots:
        doc.line("Lots", "F2")
        for number, (lot_title, lot_value) in enumerate(
            zip(lot_titles, lot_values, strict=True), 1
        ):
            doc.line(f"Lot {number}. {lot_title}", "F2")
            doc.above("Lot value (estimated)", f"£{en_amount(lot_value, False)} excluding VAT")
            doc.line(f"£{en_amount(lot_value * Decimal('1.2'), False)} including VAT")
    doc.line("Participation", "F2")
    doc.above(
        "Conditions of participation", f"Minimum annual turnover of £{en_amount(total * 2, False)}."
    )
    doc.line("Submission", "F2")
    enquiry = deadline - timedelta(days=7)
    doc.above(
        "Enquiry deadline", f"{enquiry.day} {EN_MONTHS[enquiry.month - 1]} {enquiry.year}, 5:00pm"
    )
    day = f"{WEEKDAYS[deadline.weekday()]} {ordinal(deadline.day)} {EN_MONTHS[deadline.month - 1]}"
    hour = "12 noon" if deadline.hour == 12 else "5:00pm"
    doc.above("Tender submission deadline", f"{hour} on {day} {deadline.year}")
    doc.above(
        "Submission address and any special instructions",
        "Tenders must be submitted through the e-tendering portal. Portal helpdesk: "
        "helpdesk@delta-portal.example",
    )
    doc.above("Award decision date (estimated)", f"1 March {deadline.year + 1}")
    doc.line("Contracting authority", "F2")
    doc.line(buyer, "F2")
    doc.above(
        "Public Procurement Organisation Number",
        f"P{rng.randrange(1000, 9999)}-{rng.randrange(1000, 9999)}",
    )
    doc.above("Email", email)
    doc.above("Country", "United Kingdom")
    return spec, doc


def build_unseen(rng: random.Random) -> tuple[Spec, Doc]:
    buyer, email = "Westshire Fire and Rescue Authority", "procurement@westshire-fire.example"
    title = "Supply of firefighting personal protective equipment"
    total = Decimal(rng.randrange(300, 3000) * 1000)
    deadline = pick_date(rng, (12,), (0,))
    ref = f"WFRA/{rng.randrange(100, 999)}"
    spec = Spec(
        "uk",
        title,
        buyer,
        ref,
        deadline,
        total.quantize(Decimal("0.01")),
        "GBP",
        ["35113400"],
        [],
        email,
    )
    doc = Doc("Find a Tender service")
    doc.line("Contract notice", "F2")
    doc.line("Section one: Contracting authority", "F2")
    doc.above("one.1) Name and addresses", buyer)
    doc.line("Email")
    doc.line(email)
    doc.line("Section two: Object", "F2")
    doc.above("two.1.1) Title", title)
    doc.line(f"Reference number: {ref}")
    doc.above("two.1.2) Main CPV code", "35113400 - Protective and safety clothing")
    doc.above("two.1.5) Estimated total value", f"Value excluding VAT: £{en_amount(total)}")
    doc.above("two.1.6) Information about lots", "This contract is divided into lots: No")
    doc.line("Section four. Procedure", "F2")
    day = f"{deadline.day} {EN_MONTHS[deadline.month - 1]} {deadline.year}"
    doc.above(
        "four.2.2) Time limit for receipt of tenders or requests to participate", f"Date {day}"
    )
    doc.line("Local time 12:00pm")
    doc.above("four.2.7) Conditions for opening of tenders", f"Date {day}")
    doc.line("Local time 2:00pm")
    doc.above("six.4.1) Review body", "High Court of England and Wales")
    doc.line("Email: review@justice.example")
    return spec, doc
