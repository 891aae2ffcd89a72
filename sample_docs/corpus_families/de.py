"""A German VOB/A Bekanntmachung: ``02.11.2026, 14:00 Uhr``, ``1.234.567,89 EUR netto``, Lose.

``build`` makes the family's notices (``variant`` picks the buyer, title and lot count);
``build_unseen`` its one notice in other wording and layout, written after the rules were
frozen and measured once, to see how the rules carry over to new phrasing.
"""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

from .layout import Doc
from .values import CPV_POOL, Spec, de_amount, pick_date, split_value

DE_BUYERS = [
    ("Stadt Bergheim am See", "vergabestelle@bergheim.example"),
    ("Landkreis Oberwald", "zentrale.vergabe@lk-oberwald.example"),
    ("Gemeinde Tannenfeld", "bauamt@tannenfeld.example"),
    ("Stadtverwaltung Kronach-Nord", "vergabe@kronach-nord.example"),
    ("Zweckverband Abwasser Mittelau", "ausschreibung@zv-mittelau.example"),
]
DE_TITLES = [
    "Neubau einer dreizügigen Grundschule mit Sporthalle",
    "Sanierung der Ortsdurchfahrt Hauptstraße, 2. Bauabschnitt",
    "Erweiterung des Feuerwehrgerätehauses",
    "Umbau und Modernisierung des Rathauses",
    "Erneuerung der Kläranlage, Maschinentechnik",
]
DE_LOTS = [
    "Rohbauarbeiten",
    "Dachabdichtungsarbeiten",
    "Elektroinstallation",
    "Heizung, Lüftung, Sanitär",
    "Straßenbau",
    "Landschaftsbau",
]


def build(rng: random.Random, variant: int) -> tuple[Spec, Doc]:
    buyer, email = DE_BUYERS[variant % len(DE_BUYERS)]
    title = DE_TITLES[variant % len(DE_TITLES)]
    n_lots = [3, 2, 0, 2, 3][variant % 5]
    total = Decimal(rng.randrange(300_000, 9_000_000)) + Decimal(rng.randrange(0, 100)) / 100
    lot_values = split_value(rng, total, n_lots) if n_lots else []
    lot_titles = rng.sample(DE_LOTS, n_lots)
    cpv = rng.sample(CPV_POOL, 2)
    deadline = pick_date(rng, (10, 11, 14), (0, 30))
    ref = f"VOB-{rng.randrange(10, 99)}/2026"
    spec = Spec(
        "de",
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
    doc = Doc(f"{buyer} - Öffentliche Ausschreibung nach VOB/A")
    doc.line("Bekanntmachung", "F2")
    doc.line("Öffentliche Ausschreibung nach § 12 VOB/A")
    doc.kv("a) Öffentlicher Auftraggeber:", buyer)
    doc.kv(
        "Anschrift:",
        f"Marktplatz {rng.randrange(1, 30)}, {rng.randrange(10000, 99999)} {buyer.split()[-1]}",
    )
    doc.kv("E-Mail:", email)
    doc.kv("Technische Unterstützung der Vergabeplattform:", "support@vergabeplattform.example")
    doc.kv("b) Verfahrensart:", "Öffentliche Ausschreibung")
    doc.kv("Vergabenummer:", ref)
    doc.kv("c) Bezeichnung des Auftrags:", title)
    doc.kv("d) Ort der Ausführung:", buyer.split()[-1])
    doc.kv("CPV-Code:", " ".join(cpv))
    doc.kv(
        "e) Art und Umfang der Leistung:",
        f"{title}; geschätzter Gesamtwert "
        f"{de_amount(total)} € netto ({de_amount(total * Decimal('1.19'))} € brutto).",
    )
    if n_lots:
        doc.line("f) Aufteilung in Lose: ja", "F2")
        for number, (lot_title, lot_value) in enumerate(
            zip(lot_titles, lot_values, strict=True), 1
        ):
            doc.kv(
                f"Los {number}:", f"{lot_title}, geschätzter Wert {de_amount(lot_value)} € netto"
            )
    else:
        doc.kv("f) Aufteilung in Lose:", "nein")
    doc.kv(
        "g) Ausführungsfristen:",
        f"Beginn {rng.randrange(1, 28):02d}.03.2027, Fertigstellung 30.11.2028",
    )
    doc.kv("h) Vergabeunterlagen:", "https://www.vergabeplattform.example/ausschreibung/4711")
    pub = deadline - timedelta(days=21)
    doc.kv("Veröffentlichungsdatum:", pub.strftime("%d.%m.%Y"))
    doc.kv(
        "i) Fragen zu den Vergabeunterlagen bis:",
        (deadline - timedelta(days=6)).strftime("%d.%m.%Y, 12:00 Uhr"),
    )
    doc.kv(
        "j) Schlusstermin für den Eingang der Angebote:", deadline.strftime("%d.%m.%Y, %H:%M Uhr")
    )
    doc.kv(
        "k) Eröffnungstermin:", (deadline + timedelta(minutes=15)).strftime("%d.%m.%Y, %H:%M Uhr")
    )
    doc.kv("l) Bindefrist:", (deadline + timedelta(days=60)).strftime("%d.%m.%Y"))
    doc.kv(
        "m) Sicherheitsleistung:",
        f"Vertragserfüllungsbürgschaft 5 % der Auftragssumme, "
        f"Mindestumsatz {de_amount(total * 2)} € pro Jahr.",
    )
    doc.kv("n) Nachprüfungsstelle:", "Vergabekammer des Landes, vergabekammer@land.example")
    return spec, doc


def build_unseen(rng: random.Random) -> tuple[Spec, Doc]:
    buyer, email = "Markt Eichenau", "vergabe@markt-eichenau.example"
    title = "Neubau eines Kindergartens, Zimmererarbeiten"
    total = Decimal(rng.randrange(100_000, 900_000)) + Decimal("0.50")
    deadline = pick_date(rng, (10,), (30,))
    ref = f"EI-{rng.randrange(10, 99)}-2026"
    spec = Spec(
        "de",
        title,
        buyer,
        ref,
        deadline,
        total.quantize(Decimal("0.01")),
        "EUR",
        ["45422000"],
        [],
        email,
    )
    doc = Doc("Bekanntmachung - Öffentliche Ausschreibung (VOB/A)")
    doc.line("Öffentliche Ausschreibung", "F2")
    doc.above("Auftraggeber", buyer)
    doc.kv("E-Mail:", email)
    doc.kv("Aktenzeichen:", ref)
    doc.above("Bezeichnung des Auftrags", title)
    doc.kv("CPV-Code:", "45422000")
    doc.kv("Geschätzter Auftragswert:", f"{de_amount(total)} EUR (netto)")
    doc.kv("Angebotsfrist:", f"{deadline.strftime('%d.%m.%Y')} um {deadline.strftime('%H:%M')} Uhr")
    doc.kv("Submission / Eröffnung:", f"{deadline.strftime('%d.%m.%Y')} um 11:00 Uhr")
    doc.kv("Nachprüfungsstelle:", "Vergabekammer Süd, vk-sued@regierung.example")
    return spec, doc
