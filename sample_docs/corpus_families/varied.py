"""The worded splits (``varied``, ``unseen2`` ... ``unseen7``): every family with its labels,
separators, layouts (label on the same line, above the value, in a ruled two-cell row, and
the later pools' grids, dot leaders, capitals, section numbers, pipes), date and amount
formats drawn by a seed from one wording pool of sample_docs/corpus_wording.py, with headers
and footers repeated on every page and distractors beside each value. ``varied`` draws from
the SEEN pool; each ``unseenN`` from a held-out pool, measured once."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from make_samples import TEXT_W

from .de import DE_BUYERS, DE_LOTS, DE_TITLES
from .eforms import EF_BUYERS, EF_TITLES
from .formats import AMOUNT_FORMATS, AMOUNT_UNITS, DATE_FORMATS, NBSP, WHOLE_HOUR_DATES
from .fr import FR_BUYERS, FR_LOTS, FR_TITLES
from .layout import Doc, width
from .ted import TED_BUYERS, TED_TITLES
from .uk import UK_BUYERS, UK_TITLES
from .us import US_BUYERS, US_TITLES
from .values import CPV_POOL, LOT_TITLES_EN, Spec, check_digit, hex_uuid, pick_date, split_value


@dataclass(frozen=True)
class Profile:
    lang: str
    currency: str
    buyers: Sequence[tuple[str, str]]
    titles: Sequence[str]
    lots: Sequence[str]
    lot_word: str
    notice: Sequence[str]  # the notice's type as printed at the top


PROFILES: dict[str, Profile] = {
    "ted": Profile(
        "en",
        "EUR",
        [(b, e) for b, _t, _c, e in TED_BUYERS],
        TED_TITLES,
        LOT_TITLES_EN,
        "Lot",
        ("Contract notice", "Contract notice - Works"),
    ),
    "eforms": Profile(
        "en", "EUR", EF_BUYERS, EF_TITLES, LOT_TITLES_EN, "Lot", ("Contract notice | eForms",)
    ),
    "uk": Profile("en", "GBP", UK_BUYERS, UK_TITLES, LOT_TITLES_EN, "Lot", ("Tender notice",)),
    "us": Profile(
        "en",
        "USD",
        [(b, e) for b, e, _z in US_BUYERS],
        [t.removeprefix("Request for Proposals for ") for t in US_TITLES],
        LOT_TITLES_EN,
        "Lot",
        ("REQUEST FOR PROPOSALS", "INVITATION FOR BIDS"),
    ),
    "de": Profile(
        "de", "EUR", DE_BUYERS, DE_TITLES, DE_LOTS, "Los", ("Bekanntmachung", "Ausschreibung")
    ),
    "fr": Profile(
        "fr", "EUR", FR_BUYERS, FR_TITLES, FR_LOTS, "Lot", ("Avis de marché", "AVIS DE MARCHÉ")
    ),
}

#: Label endings that read on into their value with a space, not a colon.
_RUNS_ON = ("by", "than", "bis", "le", "to", "on", "least")


def _zone_suffix(family: str, pool: str, d: datetime, rng: random.Random) -> tuple[str, datetime]:
    """The time zone printed after a deadline, and the deadline with that zone (or naive)."""
    held_out = pool == "held_out"
    if family == "eforms":
        hours = rng.choice([1, 2])
        zone = ZoneInfo(f"Etc/GMT-{hours}")
        text = " CET" if held_out and hours == 1 else f" (UTC+{hours:02d}:00)"
        if held_out and hours == 2:
            text = " +02:00"
        if pool == "held_out_3":
            text = f" (GMT+{hours})" if hours == 1 else " CEST"
        if pool == "held_out_4":
            text = f" (UTC+{hours})"
        if pool == "held_out_5":
            text = f" UTC+{hours:02d}:00"
        if pool == "held_out_6":
            text = " (Brussels time)" if hours == 1 else f" (UTC +{hours})"
            if hours == 1:
                zone = ZoneInfo("Europe/Brussels")
        if pool == "held_out_7":
            text = (
                " (GMT+01:00) Brussels, Copenhagen, Madrid, Paris"
                if hours == 1
                else " (GMT+02:00) Athens, Bucharest"
            )
        return text, d.replace(tzinfo=zone)
    if family == "us":
        zone = ZoneInfo("America/New_York")
        aware = d.replace(tzinfo=zone)
        if held_out:
            dst = bool(aware.dst())
            return (" Eastern Daylight Time" if dst else " Eastern Standard Time"), aware
        if pool == "held_out_3":
            return (" EDT" if aware.dst() else " EST"), aware
        if pool == "held_out_4":
            return " (Eastern Time)", aware
        if pool == "held_out_5":
            return " ET", aware
        if pool == "held_out_6":
            return " Eastern", aware
        if pool == "held_out_7":
            return " Eastern Prevailing Time", aware
        return " Eastern Time", aware
    return "", d


@dataclass
class Writer:
    """Prints labelled values in the layouts of one notice."""

    doc: Doc
    rng: random.Random
    lang: str
    pool: dict[str, dict[str, tuple[str, ...]]]
    layouts: Sequence[str]
    section: int = 1  # for the "numbered" layout: "2.3 Label: value"
    number: int = 0

    def label(self, key: str) -> str:
        return self.rng.choice(self.pool[key][self.lang])

    def field(self, key: str, value: str, layout: str | None = None) -> None:
        self.put(self.label(key), value, layout)

    def put(self, label: str, value: str, layout: str | None = None) -> None:
        layout = layout or self.rng.choice(self.layouts)
        first, *more = value.split("\n")
        if layout == "above" or (layout in ("table", "grid") and more):
            self.doc.above(label, first)
        elif layout == "caps_above":
            self.doc.room(2)
            self.doc.line(f"{label.upper()}:", "F2")
            self.doc.para(first)
        elif layout == "table":
            self.doc.rows([200, TEXT_W - 200], [[label, first]])
        elif layout == "grid":
            self.doc.grid(label, first)
        elif layout == "numbered":
            self.number += 1
            self.doc.para(f"{self.section}.{self.number} {label}: {first}")
        elif layout == "pipe":
            self.doc.para(f"{label} | {first}")
        elif layout == "caps_same":
            self.doc.para(f"{label.upper()}: {first}")
        elif layout == "leader":
            dots = max(3, int((190 - width(label, "F1", self.doc.size)) / 2.8))
            self.doc.para(f"{label} {'.' * dots} {first}")
        else:
            if label.split()[-1] in _RUNS_ON:
                sep = " "
            elif self.lang == "fr":
                sep = " : "
            else:
                sep = self.rng.choice([": ", ": ", " - "]) if self.lang == "en" else ": "
            self.doc.para(f"{label}{sep}{first}")
        for line in more:
            self.doc.line(line)


#: The wording pool of each split made by ``varied``.
POOL_OF_SPLIT = {
    "varied": "seen",
    "unseen2": "held_out",
    "unseen3": "held_out_3",
    "unseen4": "held_out_4",
    "unseen5": "held_out_5",
    "unseen6": "held_out_6",
    "unseen7": "held_out_7",
}
#: Layouts per pool and family (the third pool adds dot leaders, capitals, unruled grids).
LAYOUTS: dict[str, dict[str, tuple[str, ...]]] = {
    "seen": {"uk": ("above", "above", "same", "table"), "ted": ("same", "same", "above")},
    "held_out": {"uk": ("above", "above", "same", "table"), "ted": ("same", "same", "above")},
    "held_out_3": {
        "uk": ("above", "caps_above", "grid", "leader"),
        "ted": ("same", "leader", "above"),
        "": ("same", "grid", "above", "leader", "caps_above"),
    },
    "held_out_6": {
        "uk": ("above", "grid", "caps_above", "same"),
        "ted": ("numbered", "same", "above", "leader"),
        "": ("same", "table", "above", "grid", "leader", "numbered"),
    },
    "held_out_5": {
        "uk": ("above", "table", "grid", "leader"),
        "ted": ("numbered", "same", "leader"),
        "": ("table", "numbered", "leader", "caps_above", "grid", "same"),
    },
    "held_out_4": {
        "uk": ("above", "numbered", "grid", "caps_above"),
        "ted": ("numbered", "numbered", "same", "above"),
        "": ("same", "numbered", "above", "grid", "leader"),
    },
    "held_out_7": {
        "uk": ("above", "caps_same", "pipe", "table"),
        "ted": ("numbered", "pipe", "same", "leader"),
        "": ("same", "pipe", "caps_same", "grid", "above", "table"),
    },
}


def varied(rng: random.Random, family: str, pool_name: str) -> tuple[Spec, Doc]:
    """One notice of ``family`` in wording drawn from one pool of corpus_wording."""
    from corpus_wording import FILLER, FOOTERS, HEADERS, POOLS, STREETS

    pool = POOLS[pool_name]
    prof = PROFILES[family]
    lang = prof.lang
    buyer, email = rng.choice(prof.buyers)
    title = rng.choice(prof.titles)
    amount_style = rng.choice(pool["amounts"][lang])
    unit = AMOUNT_UNITS.get(amount_style, 0)
    total = Decimal(rng.randrange(30, 900) * 10_000)
    if not unit:
        total += Decimal(rng.randrange(0, 9999)) + Decimal(rng.randrange(0, 100)) / 100
    elif unit < 10_000:
        total += Decimal(rng.randrange(0, 9) * 1000 * unit // 1000)
    total = total.quantize(Decimal("0.01"))
    n_lots = rng.choice([0, 0, 2, 3])
    lot_titles = rng.sample(list(prof.lots), n_lots)
    lot_values = split_value(rng, total, n_lots) if n_lots else []
    cpv = rng.sample(CPV_POOL, rng.choice([1, 2]))
    base = pick_date(rng, (10, 11, 12, 14, 15, 16), (0, 30))
    date_style = rng.choice(pool["dates"][lang])
    if date_style in WHOLE_HOUR_DATES:
        base = base.replace(minute=0)
    zone_text, deadline = _zone_suffix(family, pool_name, base, rng)
    ref = rng.choice(
        [
            f"{buyer.split()[-1][:3].upper()}-2026-{rng.randrange(10, 999):03d}",
            f"2026/{rng.randrange(1, 200):03d}",
            f"T-{rng.randrange(1000, 9999)}-26",
            f"{rng.randrange(23, 28)}-{rng.randrange(1000, 9999)}",
        ]
    )
    has_value = family != "us" or rng.random() < 0.6
    spec = Spec(
        family,
        title,
        buyer,
        ref,
        deadline,
        total if has_value else None,
        prof.currency if has_value else None,
        cpv if family != "us" else [],
        list(zip(lot_titles, lot_values, strict=True)),
        email,
    )
    doc = Doc(rng.choice(HEADERS[lang]), footer=rng.choice(FOOTERS[lang]))
    by_family = LAYOUTS[pool_name]
    layouts = by_family.get(family, by_family.get("", ("same", "same", "above", "table")))
    w = Writer(doc, rng, lang, pool, layouts)

    def money(v: Decimal) -> str:
        style = amount_style if v == total else rng.choice(pool["amounts"][lang])
        if AMOUNT_UNITS.get(style, 0) and v % AMOUNT_UNITS[style]:
            style = {"en": "code_pre", "de": "de_code_post", "fr": "fr_euro_ht"}[lang]
        return AMOUNT_FORMATS[style](v, prof.currency)

    def when(d: datetime) -> str:
        style = date_style if d == base else rng.choice(pool["dates"][lang])
        text = DATE_FORMATS[style](d)
        return text + zone_text if d == base else text

    # The top of the notice: its type, an identifier that is not the reference, perhaps the
    # title as a heading and the buyer as a letterhead.
    doc.line(rng.choice(prof.notice), "F2")
    notice_id = rng.choice(
        [f"2026/S {rng.randrange(100, 250)}-{rng.randrange(100000, 999999)}", hex_uuid(rng)]
    )
    w.field("notice_id", notice_id, "same")
    if rng.random() < 0.5:
        doc.para(title, "F2")
    pub = base - timedelta(days=rng.randrange(20, 40))
    w.field("publication", when(pub).split("\n")[0].removeprefix("Date: "))
    doc.gap()

    def authority_block() -> None:
        w.field("authority", buyer)
        doc.para(f"{rng.randrange(1, 90)} {rng.choice(STREETS[lang])}")
        w.field("email", email)
        doc.gap()

    def object_block() -> None:
        w.field("title", title)
        w.field("reference", ref)
        if family != "us":
            stems = [stem if rng.random() < 0.5 else f"{stem}-{check_digit(stem)}" for stem in cpv]
            w.field("cpv", " ".join(stems))
        if has_value:
            w.field("value", money(total))
            gross = money((total * Decimal("1.2")).quantize(Decimal("0.01")))
            for net in (
                " net of VAT",
                " (ex VAT)",
                " zzgl. MwSt.",
                " HTVA",
                f"{NBSP}HT",
                " excl. VAT",
                " HT",
                " netto",
                " (ohne MwSt.)",
                " hors taxes",
                " (excluding VAT)",
                " zzgl. USt.",
                " H.T.",
                " hors TVA",
            ):
                gross = gross.replace(net, "")
            w.field("incl_vat", gross)
        w.field("turnover", money(total * 2))
        if "insurance" in pool:
            w.field("insurance", money(Decimal(rng.choice([1, 2, 5])) * 1_000_000))
        doc.para(rng.choice(FILLER[lang]))
        doc.gap()

    def lots_block() -> None:
        if not n_lots:
            return
        pairs = list(enumerate(zip(lot_titles, lot_values, strict=True), 1))
        if "lot_table" in pool:
            third_pool_lots(pairs)
            return
        if rng.random() < 0.5 and lang != "en":
            head = {
                "de": ["Los", "Bezeichnung", "Wert netto"],
                "fr": ["Lot", "Intitulé", "Montant estimé HT"],
            }
            rows = [head[lang]] + [[str(n), t, money(v)] for n, (t, v) in pairs]
            doc.table([40, 250, 150], rows)
            return
        for n, (t, v) in pairs:
            sep = " : " if lang == "fr" else ": "
            doc.line(f"{prof.lot_word} {n}{sep}{t}", "F2")
            w.field("lot_value", money(v), "same")
        doc.gap()

    def third_pool_lots(pairs: list[tuple[int, tuple[str, Decimal]]]) -> None:
        """Lots as a ruled table under the pool's header cells, or one heading per lot."""
        rows = [list(pool["lot_table"][lang])] + [[str(n), t, money(v)] for n, (t, v) in pairs]
        widths = [50.0, 290.0, TEXT_W - 340.0]
        fits = all(
            width(cell, "F2", doc.size) < w - 6
            for row in rows
            for cell, w in zip(row, widths, strict=True)
        )
        if fits and rng.random() < 0.5:
            doc.table(widths, rows)
            return
        form = rng.choice(pool["lot_heading"][lang])
        for n, (t, v) in pairs:
            doc.para(form.format(word=prof.lot_word, n=n, title=t), "F2")
            w.field("lot_value", money(v))
        doc.gap()

    def procedure_block() -> None:
        q = base - timedelta(days=rng.randrange(5, 12))
        w.field("questions", when(q.replace(hour=12, minute=0)))
        w.field("deadline", when(base))
        w.field("opening", when(base + timedelta(hours=1)))
        if "award" in pool:
            w.field("award", when(base + timedelta(days=rng.randrange(30, 90))))
        w.field("guarantee", money((total / 20).quantize(Decimal("0.01"))))
        doc.para(rng.choice(FILLER[lang]))
        doc.gap()

    def others_block() -> None:
        host = rng.choice(["etendering", "vergabe-portal", "achatpublic"])
        w.field("support", f"support@{host}.example")
        body = rng.choice(["tribunal", "court", "kammer"])
        w.field("review", f"review@{body}-{rng.randrange(1, 9)}.example")
        for _ in range(rng.randrange(1, 5)):
            doc.para(rng.choice(FILLER[lang]))

    blocks = [authority_block, object_block, lots_block, procedure_block]
    if rng.random() < 0.5:
        blocks[0], blocks[1] = blocks[1], blocks[0]
    for k, block in enumerate([*blocks, others_block]):
        if k and rng.random() < 0.4:
            doc.y = 0.0  # the next block starts a new page
        w.section, w.number = k + 1, 0
        block()
    return spec, doc
