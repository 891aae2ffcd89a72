"""A French avis de marché: two columns drawn row by row, lots in a ruled table,
``987 654,00 EUR HT``.

``build`` makes the family's notices (``variant`` picks the buyer, title and lot count);
``build_unseen`` its one notice in other wording and layout, written after the rules were
frozen and measured once, to see how the rules carry over to new phrasing.
"""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

from make_samples import FontName

from .layout import Doc
from .values import CPV_POOL, FR_MONTHS, Spec, pick_date, spaced_amount, split_value

FR_BUYERS = [
    ("Commune de Saint-Aubin-sur-Loire", "marches@saint-aubin.example"),
    ("Département de la Haute-Vienne", "commande.publique@hautevienne.example"),
    ("Syndicat intercommunal des eaux du Val", "achats@siev.example"),
    ("Centre hospitalier de Montclair", "marches.publics@ch-montclair.example"),
    ("Métropole de Bellerive", "dae@bellerive-metropole.example"),
]
FR_TITLES = [
    "Réhabilitation du groupe scolaire Jules Ferry",
    "Fourniture de denrées alimentaires pour la restauration collective",
    "Travaux de renouvellement des réseaux d'eau potable",
    "Maintenance des installations de chauffage",
    "Aménagement d'une voie verte",
]
FR_LOTS = [
    "Gros oeuvre",
    "Menuiseries extérieures",
    "Plomberie",
    "Électricité",
    "Peinture",
    "Fruits et légumes",
    "Produits laitiers",
    "Terrassement",
]


def build(rng: random.Random, variant: int) -> tuple[Spec, Doc]:
    buyer, email = FR_BUYERS[variant % len(FR_BUYERS)]
    title = FR_TITLES[variant % len(FR_TITLES)]
    n_lots = [3, 4, 2, 3, 2][variant % 5]
    total = Decimal(rng.randrange(100_000, 5_000_000))
    lot_values = split_value(rng, total, n_lots)
    lot_titles = rng.sample(FR_LOTS, n_lots)
    cpv = rng.sample(CPV_POOL, 1)
    deadline = pick_date(rng, (12, 16, 17), (0,))
    ref = f"2026-AO-{rng.randrange(10, 999):03d}"
    spec = Spec(
        "fr",
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
    doc = Doc(f"BOAMP - Avis n° 26-{rng.randrange(10000, 99999)}")
    doc.line("AVIS D'APPEL PUBLIC À LA CONCURRENCE", "F2")
    doc.line("Avis de marché - Procédure adaptée")
    pub = deadline - timedelta(days=25)
    left: list[tuple[str, FontName]] = [
        ("Identification de l'acheteur", "F2"),
        (f"Nom complet de l'acheteur : {buyer}", "F1"),
        (f"Courriel : {email}", "F1"),
        ("Assistance technique du profil d'acheteur : assistance@profil-acheteur.example", "F1"),
        (f"Date d'envoi du présent avis : {pub.day} {FR_MONTHS[pub.month - 1]} {pub.year}", "F1"),
    ]
    right: list[tuple[str, FontName]] = [
        ("Objet du marché", "F2"),
        (f"Intitulé du marché : {title}", "F1"),
        (f"Numéro de référence : {ref}", "F1"),
        (f"Code CPV principal : {cpv[0]}", "F1"),
        (f"Valeur estimée hors TVA : {spaced_amount(total)} € HT", "F1"),
    ]
    doc.columns(left, right)
    doc.line("Description des lots", "F2")
    rows = [["Lot", "Intitulé", "Montant estimé HT"]]
    rows += [
        [str(n), t, f"{spaced_amount(v)} €"]
        for n, (t, v) in enumerate(zip(lot_titles, lot_values, strict=True), 1)
    ]
    doc.table([40, 250, 150], rows)
    doc.line("Conditions de participation", "F2")
    doc.para(
        f"Chiffre d'affaires annuel minimum : {spaced_amount(total * 2)} €. Montant TTC "
        f"estimé : {spaced_amount(total * Decimal('1.2'))} €. Garantie à première demande "
        f"de {spaced_amount(total / 20)} €."
    )
    doc.line("Procédure", "F2")
    quest = deadline - timedelta(days=10)
    doc.para(
        f"Date limite de remise des questions : {quest.day} {FR_MONTHS[quest.month - 1]} "
        f"{quest.year} à 12h00"
    )
    doc.para(
        f"Date limite de réception des offres : {deadline.day} "
        f"{FR_MONTHS[deadline.month - 1]} {deadline.year} à {deadline.hour}h{deadline.minute:02d}"
    )
    doc.para(
        "Délai de validité des offres : 120 jours à compter de la date limite de réception "
        "des offres."
    )
    doc.line("Recours", "F2")
    doc.para(
        "Instance chargée des procédures de recours : Tribunal administratif, "
        "greffe.ta@juradm.example"
    )
    return spec, doc


def build_unseen(rng: random.Random) -> tuple[Spec, Doc]:
    buyer, email = "Communauté de communes du Pays de Brenne", "marches@cc-brenne.example"
    title = "Collecte et traitement des déchets ménagers"
    total = Decimal(rng.randrange(500_000, 3_000_000))
    values = split_value(rng, total, 2)
    lots = ["Collecte en porte-à-porte", "Traitement et valorisation"]
    deadline = pick_date(rng, (12,), (0,))
    ref = f"CCB-{rng.randrange(2026001, 2026999)}"
    spec = Spec(
        "fr",
        title,
        buyer,
        ref,
        deadline,
        total.quantize(Decimal("0.01")),
        "EUR",
        ["90511000"],
        list(zip(lots, values, strict=True)),
        email,
    )
    doc = Doc("Avis de marché")
    doc.line("AVIS DE MARCHÉ", "F2")
    doc.kv("Nom et adresse officiels de l'acheteur :", buyer)
    doc.kv("Adresse électronique :", email)
    doc.kv("Objet :", title)
    doc.kv("Référence acheteur :", ref)
    doc.kv("Classification CPV :", "90511000")
    doc.kv("Valeur estimée (HT) :", f"{spaced_amount(total)} euros")
    rows = [["N°", "Désignation du lot", "Estimation HT"]]
    rows += [
        [str(n), t, f"{spaced_amount(v)} €"]
        for n, (t, v) in enumerate(zip(lots, values, strict=True), 1)
    ]
    doc.table([40, 250, 150], rows)
    doc.kv(
        "Date et heure limites de réception des offres :",
        f"{deadline.strftime('%d/%m/%Y')} à {deadline.strftime('%H:%M')}",
    )
    doc.kv("Date d'envoi du présent avis :", (deadline - timedelta(days=30)).strftime("%d/%m/%Y"))
    return spec, doc
