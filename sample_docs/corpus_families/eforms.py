"""TED eForms: ``Lot: LOT-0001`` blocks, deadlines with a UTC offset, the Organisations section
at the end, notice UUIDs.

``build`` makes the family's notices (``variant`` picks the buyer, title and lot count);
``build_unseen`` its one notice in other wording and layout, written after the rules were
frozen and measured once, to see how the rules carry over to new phrasing.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from .layout import Doc
from .values import CPV_POOL, LOT_TITLES_EN, Spec, hex_uuid, pick_date, spaced_amount, split_value

EF_BUYERS = [
    ("Agence régionale de santé Occitanie", "achats@ars-occitanie.example"),
    ("Comune di Valdoro", "appalti@comune-valdoro.example"),
    ("Rijkswaterstaat Oost-Nederland", "aanbesteding@rws-oost.example"),
    ("Powiat Brzeski", "zamowienia@powiat-brzeski.example"),
    ("Servicio Andaluz de Empleo", "contratacion@sae.example"),
]
EF_TITLES = [
    "Supply of electric buses and charging infrastructure",
    "IT service desk and end-user support services",
    "Dredging of navigation channels",
    "Catering services for school canteens",
    "Security guarding of public buildings",
]


def build(rng: random.Random, variant: int) -> tuple[Spec, Doc]:
    buyer, email = EF_BUYERS[variant % len(EF_BUYERS)]
    title = EF_TITLES[variant % len(EF_TITLES)]
    n_lots = [2, 1, 3, 2, 1][variant % 5]
    total = Decimal(rng.randrange(500, 20000) * 1000)
    lot_values = split_value(rng, total, n_lots)
    lot_titles = rng.sample(LOT_TITLES_EN, n_lots)
    cpv = rng.sample(CPV_POOL, 1 + n_lots)
    offset = rng.choice([1, 2])
    tz = ZoneInfo("Etc/GMT-1") if offset == 1 else ZoneInfo("Etc/GMT-2")
    deadline = pick_date(rng, (9, 10, 12, 16), (0,)).replace(tzinfo=tz)
    ref = f"EF/{rng.randrange(100, 999)}/2026"
    uid = hex_uuid(rng)
    spec = Spec(
        "eforms",
        title,
        buyer,
        ref,
        deadline,
        total.quantize(Decimal("0.01")),
        "EUR",
        cpv,
        list(zip(lot_titles, lot_values, strict=True)),
        email,
    )
    pub = f"{rng.randrange(100000, 999999):08d}-2026"
    doc = Doc(f"OJ S {rng.randrange(100, 250)}/2026  {pub}")

    def when(d: datetime) -> str:
        return d.strftime("%d/%m/%Y %H:%M:%S") + f" (UTC+{offset:02d}:00)"

    doc.line(f"{buyer[:30]} - {title[:30]}", "F2")
    doc.line("Contract notice - Standard regime, Directive 2014/24/EU")
    doc.line("1. Buyer", "F2")
    doc.line("1.1 Buyer")
    doc.kv("Official name:", buyer)
    doc.kv("Legal type of the buyer:", "Local authority")
    doc.line("2. Procedure", "F2")
    doc.line("2.1 Procedure")
    doc.kv("Title:", title)
    doc.kv("Description:", f"The buyer procures the {title.lower()}.")
    doc.kv("Procedure identifier:", hex_uuid(rng))
    doc.kv("Internal identifier:", ref)
    doc.line("2.1.1 Purpose")
    doc.kv("Main nature of the contract:", rng.choice(["Supplies", "Services", "Works"]))
    doc.kv("Main classification (cpv):", f"{cpv[0]} {rng.choice(['Works', 'Services'])}")
    doc.line("2.1.3 Value")
    doc.kv("Estimated value excluding VAT:", f"{spaced_amount(total, '.')} Euro")
    doc.line("5. Lot", "F2")
    for number, (lot_title, lot_value) in enumerate(zip(lot_titles, lot_values, strict=True), 1):
        doc.line(f"5.1 Lot: LOT-{number:04d}", "F2")
        doc.kv("Title:", lot_title)
        doc.kv("Description:", f"{lot_title} for the {title.lower()}.")
        doc.kv("Internal identifier:", f"{ref}-L{number}")
        doc.line("5.1.1 Purpose")
        doc.kv("Main classification (cpv):", f"{cpv[number]}")
        doc.line("5.1.5 Value")
        doc.kv("Estimated value excluding VAT:", f"{spaced_amount(lot_value, '.')} Euro")
        doc.line("5.1.9 Selection criteria")
        doc.kv("Criterion:", "Average yearly turnover")
        doc.kv("Description:", f"At least {spaced_amount(lot_value * 2, '.')} Euro.")
        doc.line("5.1.12 Public procurement terms")
        doc.kv(
            "Deadline for requesting additional information:", when(deadline - timedelta(days=8))
        )
        doc.kv("Deadline for receipt of tenders:", when(deadline))
        doc.line("Information about public opening:")
        doc.kv("Opening date:", when(deadline + timedelta(hours=1)))
        doc.line("5.1.16 Further information, mediation and review")
        doc.kv("Review organisation:", "Review Chamber")
        doc.kv("Organisation providing additional information:", buyer)
    doc.line("8. Organisations", "F2")
    doc.line("8.1 ORG-0001", "F2")
    doc.kv("Official name:", buyer)
    doc.kv("Email:", email)
    doc.kv("Roles of this organisation:", "Buyer")
    doc.line("8.1 ORG-0002", "F2")
    doc.kv("Official name:", "Review Chamber")
    doc.kv("Email:", "info@review-chamber.example")
    doc.kv("Roles of this organisation:", "Review organisation")
    doc.line("8.1 ORG-0003", "F2")
    doc.kv("Official name:", "Publications Office of the European Union")
    doc.kv("Email:", "ted@publications.example")
    doc.kv("Roles of this organisation:", "TED eSender")
    doc.line("10. Change", "F2")
    doc.kv("Notice identifier:", f"{uid} - 01")
    doc.kv("Notice dispatch date:", when(deadline - timedelta(days=40)))
    doc.kv("Publication date:", (deadline - timedelta(days=37)).strftime("%d/%m/%Y"))
    doc.kv("Notice publication number:", pub)
    return spec, doc


def build_unseen(rng: random.Random) -> tuple[Spec, Doc]:
    buyer, email = "Gemeinde Altmünster", "einkauf@altmuenster.example"
    title = "Winter road maintenance services"
    total = Decimal(rng.randrange(200, 900) * 1000)
    deadline = pick_date(rng, (10,), (0,)).replace(tzinfo=ZoneInfo("Etc/GMT-1"))
    ref = f"AM-{rng.randrange(1000, 9999)}"
    cpv = ["90620000"]
    spec = Spec(
        "eforms",
        title,
        buyer,
        ref,
        deadline,
        total.quantize(Decimal("0.01")),
        "EUR",
        cpv,
        [("Winter road maintenance services", total.quantize(Decimal("0.01")))],
        email,
    )
    doc = Doc(f"Notice {hex_uuid(rng)}")
    doc.line("Contract notice | Standard regime", "F2")
    doc.line("1. Buyer")
    doc.kv("1.1 Buyer Official name:", buyer)
    doc.line("2. Procedure")
    doc.kv("2.1 Procedure Title:", title)
    doc.kv("Internal identifier:", ref)
    doc.kv("Main classification (cpv):", f"{cpv[0]} Snow-clearing services")
    doc.line("5. Lot")
    doc.line("5.1 Lot: LOT-0001")
    doc.kv("Title:", title)
    doc.kv("Estimated value excluding VAT:", f"{spaced_amount(total, '.')} EUR")
    doc.kv("Guarantee required:", f"Tender guarantee of {spaced_amount(total / 50, '.')} EUR")
    doc.kv("Deadline for receipt of tenders:", deadline.strftime("%d/%m/%Y %H:%M:%S") + " +01:00")
    doc.kv("Start date:", (deadline + timedelta(days=60)).strftime("%d/%m/%Y"))
    doc.line("8. Organisations")
    doc.line("8.1 ORG-0001")
    doc.kv("Official name:", buyer)
    doc.kv("Email:", email)
    doc.kv("Roles of this organisation:", "Buyer")
    doc.line("8.1 ORG-0002")
    doc.kv("Official name:", "Vergabekammer Nord")
    doc.kv("Email:", "vk@vergabekammer-nord.example")
    doc.kv("Roles of this organisation:", "Review organisation")
    return spec, doc
