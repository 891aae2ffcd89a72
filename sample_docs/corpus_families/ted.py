"""TED standard forms: Sections I-VI, ``II.1.1) Title``, ``II.1.5) Estimated total value``,
``IV.2.2)`` deadline as ``Date: dd/mm/yyyy`` + ``Local time: hh:mm``, one ``II.2`` block per lot,
CPV codes printed with or without their check digit.

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
    LOT_TITLES_EN,
    Spec,
    check_digit,
    pick_date,
    spaced_amount,
    split_value,
)

TED_BUYERS = [
    ("Stadtwerke Lindenau GmbH", "Lindenau", "DE", "vergabe@stadtwerke-lindenau.example"),
    ("Gemeente Waterveld", "Waterveld", "NL", "inkoop@waterveld.example"),
    ("Region Mälardalen Health Authority", "Västerås", "SE", "upphandling@rmha.example"),
    ("Municipality of Korvala", "Korvala", "FI", "hankinnat@korvala.example"),
    ("Direction Générale des Routes du Luxembourg", "Luxembourg", "LU", "marches@dgr.example"),
]
TED_TITLES = [
    "Renovation of the district heating network in the old town, phase 2",
    "Framework agreement for the supply of medical consumables for the hospitals of the region",
    "Design and construction of a pedestrian and cycle bridge over the river",
    "Maintenance of public lighting installations",
    "Cleaning services for municipal buildings and schools 2027-2030",
    "Supply and installation of a digital document management system",
]


def build(rng: random.Random, variant: int) -> tuple[Spec, Doc]:
    buyer, town, country, email = TED_BUYERS[variant % len(TED_BUYERS)]
    title = TED_TITLES[(variant * 2 + 1) % len(TED_TITLES)]
    n_lots = [3, 2, 0, 4, 2][variant % 5]
    total = Decimal(rng.randrange(800, 9000) * 1000)
    lot_values = split_value(rng, total, n_lots) if n_lots else []
    lot_titles = rng.sample(LOT_TITLES_EN, n_lots)
    cpv = rng.sample(CPV_POOL, 1 + max(n_lots, 1))
    deadline = pick_date(rng, (10, 11, 12, 14), (0, 30))
    ref = f"{town[:3].upper()}-{2026}-{rng.randrange(10, 999):03d}"
    ojs = f"2026/S {rng.randrange(100, 250):03d}-{rng.randrange(100000, 999999)}"
    spec = Spec(
        "ted",
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
    doc = Doc(f"{ojs}  {country}-{town}: {title[:40]}")
    check = variant % 2 == 0  # some notices print the CPV check digit, some do not

    def code(stem: str) -> str:
        return f"{stem}-{check_digit(stem)}" if check else stem

    doc.line("Contract notice", "F2")
    doc.line("Directive 2014/24/EU")
    doc.line("Section I: Contracting authority", "F2")
    doc.line("I.1) Name and addresses")
    doc.kv("Official name:", buyer)
    doc.kv("National registration number:", f"{country}{rng.randrange(10**8, 10**9)}")
    doc.kv("Postal address:", f"{rng.randrange(1, 90)} Market Street")
    doc.kv("Town:", f"{town}  NUTS code: {country}{rng.randrange(100, 999)}  Country: {country}")
    doc.kv("Contact person:", "Procurement department")
    doc.kv("E-mail:", email)
    doc.kv("Telephone:", f"+{rng.randrange(30, 49)} {rng.randrange(10**7, 10**8)}")
    doc.kv("Internet address(es):", f"Main address: https://www.{town.lower()}.example")
    doc.line("I.3) Communication")
    doc.para(
        "The procurement documents are available for unrestricted and full direct access, "
        "free of charge, at: https://etendering.example/cft/12345"
    )
    doc.para("Additional information can be obtained from the abovementioned address")
    doc.para(
        "Tenders or requests to participate must be submitted electronically via: "
        "https://etendering.example. Technical questions about the platform: "
        "support@etendering.example (no procurement questions)"
    )
    doc.line("Section II: Object", "F2")
    doc.line("II.1) Scope of the procurement")
    doc.kv("II.1.1) Title:", title)
    doc.kv("Reference number:", ref)
    doc.line("II.1.2) Main CPV code")
    doc.line(code(cpv[0]))
    doc.line("II.1.3) Type of contract")
    doc.line(rng.choice(["Works", "Services", "Supplies"]))
    doc.line("II.1.4) Short description:")
    doc.para(
        f"The contracting authority intends to award a contract for the {title.lower()}. "
        f"Tenderers must have an average yearly turnover of at least "
        f"{spaced_amount(total * 2, '.')} EUR in the last three financial years."
    )
    doc.line("II.1.5) Estimated total value")
    doc.kv("Value excluding VAT:", spaced_amount(total, "."))
    doc.kv("Currency:", "EUR")
    doc.line("II.1.6) Information about lots")
    doc.kv("This contract is divided into lots:", "yes" if n_lots else "no")
    if n_lots:
        doc.line("Tenders may be submitted for all lots")
    doc.line("II.2) Description")
    blocks: list[tuple[int, tuple[str, Decimal | None]]]
    blocks = list(enumerate(zip(lot_titles, lot_values, strict=True), start=1))
    blocks = blocks or [(0, ("", None))]
    for number, (lot_title, lot_value) in blocks:
        if number:
            doc.kv("II.2.1) Title:", lot_title)
            doc.kv("Lot No:", str(number))
        doc.line("II.2.2) Additional CPV code(s)")
        doc.line(code(cpv[number]) if number else code(cpv[1]))
        doc.line("II.2.3) Place of performance")
        doc.kv("Main site or place of performance:", town)
        doc.line("II.2.4) Description of the procurement:")
        doc.para(
            f"See the procurement documents. Performance guarantee of "
            f"{spaced_amount((lot_value or total) / 20, '.')} EUR."
        )
        doc.line("II.2.6) Estimated value")
        doc.kv("Value excluding VAT:", spaced_amount(lot_value or total, "."))
        doc.kv("Currency:", "EUR")
        doc.line("II.2.7) Duration of the contract, framework agreement or dynamic purchasing")
        doc.kv("Duration in months:", str(rng.choice([12, 24, 36, 48])))
    doc.line("Section III: Legal, economic, financial and technical information", "F2")
    doc.line("III.1.2) Economic and financial standing")
    doc.para(f"Minimum turnover: {spaced_amount(total * 3, '.')} EUR per year.")
    doc.line("Section IV: Procedure", "F2")
    doc.line("IV.1.1) Type of procedure")
    doc.line("Open procedure")
    doc.line("IV.2.2) Time limit for receipt of tenders or requests to participate")
    doc.kv("Date:", deadline.strftime("%d/%m/%Y"))
    doc.kv("Local time:", deadline.strftime("%H:%M"))
    doc.line("IV.2.4) Languages in which tenders or requests to participate may be submitted:")
    doc.line("English")
    doc.line("IV.2.6) Minimum time frame during which the tenderer must maintain the tender")
    doc.kv("Duration in months:", "6 (from the date stated for receipt of tender)")
    doc.line("IV.2.7) Conditions for opening of tenders")
    opening = deadline + timedelta(minutes=30)
    doc.kv("Date:", opening.strftime("%d/%m/%Y"))
    doc.kv("Local time:", opening.strftime("%H:%M"))
    doc.line("Section VI: Complementary information", "F2")
    doc.line("VI.3) Additional information:")
    clar = deadline - timedelta(days=10)
    doc.para(
        f"Questions must be received by {clar.strftime('%d/%m/%Y')} at 12:00. "
        "Automatic notifications are sent from noreply@etendering.example."
    )
    doc.line("VI.4.1) Review body")
    doc.kv("Official name:", f"Administrative Court of {town}")
    doc.kv("E-mail:", f"review@court-{town.lower()}.example")
    doc.line("VI.5) Date of dispatch of this notice:")
    doc.line((deadline - timedelta(days=35)).strftime("%d/%m/%Y"))
    return spec, doc


def build_unseen(rng: random.Random) -> tuple[Spec, Doc]:
    buyer, town, email = "Ville de Rivecourt", "Rivecourt", "achats@rivecourt.example"
    title = "Supply of road salt and de-icing agents for the winter seasons 2027-2029"
    total = Decimal(rng.randrange(300, 900) * 1000)
    values = split_value(rng, total, 2)
    lots = ["Road salt", "Liquid de-icing agents"]
    cpv = ["34927100", "24312123", "24962000"]
    deadline = pick_date(rng, (11,), (0,))
    ref = f"RIV/ACH/{rng.randrange(100, 999)}"
    spec = Spec(
        "ted",
        title,
        buyer,
        ref,
        deadline,
        total.quantize(Decimal("0.01")),
        "EUR",
        cpv,
        list(zip(lots, values, strict=True)),
        email,
    )
    doc = Doc(f"{rng.randrange(100000, 999999)}-2026 - Supplies - Contract notice")
    doc.line("Supplies - 2026/S 201-" + str(rng.randrange(100000, 999999)), "F2")
    doc.line("Section I: Contracting authority", "F2")
    doc.kv("I.1) Name and addresses Official name:", buyer)
    doc.kv("Town:", town)
    doc.kv("E-mail:", email)
    doc.line("Section II: Object", "F2")
    doc.kv("II.1.1) Title:", title)
    doc.kv("Reference number:", ref)
    doc.kv("II.1.2) Main CPV code:", f"{cpv[0]} Road salt")
    doc.kv(
        "II.1.5) Estimated total value: Value excluding VAT:",
        f"{spaced_amount(total, '.')} Currency: EUR",
    )
    for n, (t, v) in enumerate(zip(lots, values, strict=True), 1):
        doc.kv("II.2.1) Title:", f"{t} Lot No: {n}")
        doc.kv("II.2.2) Additional CPV code(s):", cpv[n])
        doc.kv(
            "II.2.6) Estimated value: Value excluding VAT:",
            f"{spaced_amount(v, '.')} Currency: EUR",
        )
    doc.line("Section III", "F2")
    doc.kv(
        "III.1.3) Technical and professional ability:",
        f"Deliveries of at least {spaced_amount(total, '.')} EUR over the last three years.",
    )
    doc.line("Section IV: Procedure", "F2")
    doc.kv(
        "IV.2.2) Time limit for receipt of tenders or requests to participate: Date:",
        f"{deadline.strftime('%d/%m/%Y')} Local time: {deadline.strftime('%H:%M')}",
    )
    opening = deadline + timedelta(hours=1)
    doc.kv(
        "IV.2.7) Conditions for opening of tenders: Date:",
        f"{opening.strftime('%d/%m/%Y')} Local time: {opening.strftime('%H:%M')}",
    )
    doc.kv(
        "VI.4.1) Review body: Tribunal administratif de Rivecourt, e-mail:",
        "greffe@ta-rivecourt.example",
    )
    doc.kv(
        "VI.5) Date of dispatch of this notice:",
        (deadline - timedelta(days=40)).strftime("%d/%m/%Y"),
    )
    return spec, doc
