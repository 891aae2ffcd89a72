"""Notice formats read as structures: where a known form states each field.

A notice printed from a standard form says where each field is: TED's standard forms by section
numbers (the same in every language: ``II.1.1)`` is the title, ``IV.2.2)`` the deadline), BOAMP's
avis by their headings ("Objet du marché :"). The forms are data, in ``FORMS``; a document is read
by the first form it matches, and the other rules fill only the fields its form left empty.
A value read from its form's place is sure (its confidence is ``FORM_CONFIDENCE``); where the
place is empty, the field is empty rather than guessed from elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from pg_pipeline_documents.extract_offline.amounts import (
    _CURRENCY_LABEL,
    _ISO_CURRENCIES,
    _amounts,
    _document_currency,
    _join_split_groups,
)
from pg_pipeline_documents.extract_offline.codes import _reference_from, cpv_codes_in, email_in
from pg_pipeline_documents.extract_offline.concepts import fold
from pg_pipeline_documents.extract_offline.dates import _parse_deadline
from pg_pipeline_documents.extract_offline.evidence import _Ev
from pg_pipeline_documents.extract_offline.normalise import _clean_text_value, _fix_digit_o

#: How sure a value read from its form's place is.
FORM_CONFIDENCE = 0.95


@dataclass
class FormLot:
    number: int
    title: str
    value: Decimal | None
    line: int


@dataclass
class FormReading:
    """The fields one form gives, each with where it was read; ``owned`` names the fields
    whose place the form has: an empty place there is an answer (the notice states no such
    value), and the general rules do not look elsewhere for one."""

    form: str
    title: tuple[str, _Ev] | None = None
    authority: tuple[str, _Ev] | None = None
    reference: tuple[str, _Ev] | None = None
    deadline: tuple[datetime, _Ev] | None = None
    value: tuple[Decimal, str | None, _Ev] | None = None
    cpv: tuple[list[str], _Ev] | None = None
    email: tuple[str, _Ev] | None = None
    lots: list[FormLot] = field(default_factory=list)
    owned: set[str] = field(default_factory=set)


def _ev(line: int, rule: str) -> _Ev:
    return _Ev(line, rule, FORM_CONFIDENCE)


# A label and its value on one line: "Official name: Stadt X", "Lot No: 2".
_LABEL_VALUE = re.compile(r"^(?P<label>[^\W\d_][^:]{0,60}?)\s*:\s*(?P<value>.*)$")


def _joined(lines: Sequence[str], start: int, end: int, *, limit: int = 4) -> tuple[str, int]:
    """The text of the first lines of ``[start, end)`` up to a label line (a title wraps; the
    label after it starts something else), and the last line used."""
    parts: list[str] = []
    last = start
    for i in range(start, min(end, start + 12)):
        line = lines[i]
        if not line:
            if parts:
                break
            continue
        if parts and _LABEL_VALUE.match(line):
            break
        parts.append(line)
        last = i
        if len(parts) == limit:
            break
    return " ".join(parts), last


# --------------------------------------------------------------------------------------------
# TED standard forms: sections by number.
# --------------------------------------------------------------------------------------------

_TED_SECTION = re.compile(
    r"^(?P<key>(?:[IVX]{1,4}|1{2,3}(?=\.\d\.))(?:\.\d{1,2}){1,3})\)\s*(?P<head>.*)$"
)
# OCR reads the Roman II and III of a section number as the digits 11 and 111.
_ROMAN_AS_DIGITS = {"11": "II", "111": "III"}

#: Where a TED standard form states each field (the same numbers in every language).
TED_SECTIONS = {
    "buyer": "I.1",
    "title": "II.1.1",
    "main_cpv": "II.1.2",
    "total_value": "II.1.5",
    "lot": "II.2.1",
    "extra_cpv": "II.2.2",
    "lot_value": "II.2.6",
    "deadline": "IV.2.2",
}
#: A document with this many of the form's sections is read as the form.
TED_MIN_SECTIONS = 4


@dataclass(frozen=True)
class _Section:
    key: str
    head: str
    line: int  # the section's number line
    end: int  # the next section's line


def _ted_sections(lines: Sequence[str]) -> list[_Section]:
    found = [
        (i, _roman(m.group("key")), m.group("head").strip())
        for i, line in enumerate(lines)
        if (m := _TED_SECTION.match(line))
    ]
    return [
        _Section(key, head, i, found[k + 1][0] if k + 1 < len(found) else len(lines))
        for k, (i, key, head) in enumerate(found)
    ]


def _roman(key: str) -> str:
    first, _, rest = key.partition(".")
    return f"{_ROMAN_AS_DIGITS.get(first, first)}.{rest}"


def _head_value(head: str) -> str:
    """A value printed on the section's own line after its label ("Title: X")."""
    m = _LABEL_VALUE.match(head)
    return m.group("value").strip() if m else ""


def _section_text(lines: Sequence[str], s: _Section, limit: int = 4) -> tuple[str, int]:
    inline = _head_value(s.head)
    if inline:
        return inline, s.line
    return _joined(lines, s.line + 1, s.end, limit=limit)


def _body(lines: Sequence[str], s: _Section, limit: int = 4) -> str:
    """The section's text: what follows its label on its own line, and its first lines."""
    return "\n".join([_head_value(s.head), *lines[s.line + 1 : min(s.end, s.line + 1 + limit)]])


# "Value excluding VAT: 652 000.00 Currency: EUR": labels inside one line.
# A label starts a line or a capitalised word after a blank, and has a few words at most.
_INLINE_PAIR = re.compile(
    r"(?P<label>(?:^[^\W\d_]|(?<=\s)[A-ZÀ-ÖØ-Þ])[\w'.()/-]*(?:\s[\w'.()/-]+){0,3}?)\s?:\s+"
)


def _pairs(text: str) -> list[tuple[str, str]]:
    """A line's labels and their values, in order ("" before the first label)."""
    marks = list(_INLINE_PAIR.finditer(text))
    out = [("", text[: marks[0].start()].strip())] if marks else [("", text.strip())]
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        out.append((m.group("label").strip(), text[m.end() : end].strip()))
    return [(label, value) for label, value in out if label or value]


def _labelled_lines(lines: Sequence[str], s: _Section) -> list[tuple[int, str, str]]:
    """The section's label/value pairs with their lines: on the section's own line ("Name and
    addresses Official name: X", "Title: Road salt Lot No: 1"), then one or more a line."""
    found = [(s.line, label, value) for label, value in _pairs(s.head) if label]
    for i in range(s.line + 1, s.end):
        if _LABEL_VALUE.match(lines[i]):
            found += [(i, label, value) for label, value in _pairs(lines[i]) if label]
    return found


def _amount_in(text: str, fallback_currency: str | None) -> tuple[Decimal, str | None] | None:
    """The first amount of a section, with its currency: printed beside it, named by a label
    ("Currency: EUR") or anywhere in the section, else the document's one currency."""
    found = [a for a in _amounts(_join_split_groups(_fix_digit_o(text))) if a.value >= 1]
    money = [a for a in found if a.currency is not None] or found
    if not money:
        return None
    currency = money[0].currency
    if currency is None:
        named = _CURRENCY_LABEL.search(text) or re.search(r"\b(?P<code>[A-Z]{3})\b", text)
        if named and named.group("code") in _ISO_CURRENCIES:
            currency = named.group("code")
        else:
            currency = fallback_currency
    return money[0].value, currency


def read_ted(lines: Sequence[str]) -> FormReading | None:
    sections = _ted_sections(lines)
    keys = {s.key for s in sections}
    if len(keys & set(TED_SECTIONS.values())) < TED_MIN_SECTIONS:
        return None
    out = FormReading("TED standard form")
    currency = _document_currency("\n".join(lines))
    by_key: dict[str, list[_Section]] = {}
    for s in sections:
        by_key.setdefault(s.key, []).append(s)
    # A section that is there owns its fields; a form always states its value, codes, lots and
    # reference in their places, so none of them is taken from elsewhere.
    out.owned = {"reference", "value", "cpv", "lots"}
    present = {"title": "title", "buyer": "authority", "deadline": "deadline"}
    for place, name in present.items():
        if TED_SECTIONS[place] in by_key:
            out.owned.add(name)
    if TED_SECTIONS["buyer"] in by_key:
        out.owned.add("email")

    if buyer := by_key.get(TED_SECTIONS["buyer"]):
        b = buyer[0]
        labelled = _labelled_lines(lines, b)
        end = b.end
        if labelled:
            i, first_label, name = labelled[0]
            if not name and i + 1 < b.end:
                name = lines[i + 1]
            value = _clean_text_value(name)
            if value:
                out.authority = (value, _ev(i, "TED section I.1"))
            # Joint procurement lists further buyers under the same label: the first buyer's
            # block ends where the label comes again.
            again = [j for j, label, _ in labelled[1:] if label == first_label and j > i]
            end = again[0] if again else b.end
        else:
            first = next((i for i in range(b.line + 1, b.end) if lines[i]), None)
            value = _clean_text_value(lines[first]) if first is not None else None
            if first is not None and value:
                out.authority = (value, _ev(first, "TED section I.1"))
        for i in range(b.line, end):
            email = email_in(lines[i])
            if email:
                out.email = (email, _ev(i, "TED section I.1"))
                break

    if title := by_key.get(TED_SECTIONS["title"]):
        t = title[0]
        text, last = _section_text(lines, t, limit=3)
        inline = _pairs(text) if last == t.line else [("", text)]
        # "Road salt Reference number: X" on one line; a title that opens like a label ("Lot 2:
        # Aberdeen") is kept whole.
        value = _clean_text_value(inline[0][1] if inline and not inline[0][0] else text)
        if value:
            out.title = (value, _ev(t.line, "TED section II.1.1"))
        # The reference follows the title: a label after the title's own.
        pairs = _labelled_lines(lines, t)
        after = pairs[1:] if pairs and pairs[0][0] == t.line else pairs
        for i, _label, raw in after:
            if (i != t.line and i <= last) or not raw:
                continue
            ref = _reference_from(raw)
            if ref:
                out.reference = (ref, _ev(i, "TED section II.1.1"))
            break

    codes: list[str] = []
    first_cpv: int | None = None
    for key in (TED_SECTIONS["main_cpv"], TED_SECTIONS["extra_cpv"]):
        for s in by_key.get(key, []):
            for code in cpv_codes_in(_body(lines, s, limit=12), labelled=True):
                if code[:8] not in {c[:8] for c in codes}:
                    codes.append(code)
                    first_cpv = s.line if first_cpv is None else first_cpv
    if codes and first_cpv is not None:
        out.cpv = (codes, _ev(first_cpv, "TED sections II.1.2 and II.2.2"))

    if total := by_key.get(TED_SECTIONS["total_value"]):
        s = total[0]
        found = _amount_in(_body(lines, s, limit=3), currency)
        if found is not None:
            out.value = (found[0], found[1], _ev(s.line, "TED section II.1.5"))

    if deadline := by_key.get(TED_SECTIONS["deadline"]):
        s = deadline[0]
        when = _parse_deadline(_body(lines, s, limit=4))
        if when is not None:
            out.deadline = (when, _ev(s.line, "TED section IV.2.2"))

    out.lots = _ted_lots(lines, sections, currency)
    lot_values = by_key.get(TED_SECTIONS["lot_value"], [])
    if out.value is None and not out.lots and len(lot_values) == 1:
        # A contract not divided into lots states its value in its one description.
        s = lot_values[0]
        found = _amount_in(_body(lines, s, limit=3), currency)
        if found is not None:
            out.value = (found[0], found[1], _ev(s.line, "TED section II.2.6"))
    return out


# A lot's number after its title on one line, in the forms' languages.
_INLINE_LOT_NUMBER = re.compile(
    r"\s(?:lot|los|lote|lotto|partie|part|del|osa)[\s.-]*(?:no|nr|n[°ºo]|number|num[ée]ro|nummer)?"
    r"\.?\s?:\s*(?P<num>\d{1,6})\s*$",
    re.I,
)


def _ted_lots(
    lines: Sequence[str], sections: Sequence[_Section], currency: str | None
) -> list[FormLot]:
    """Each ``II.2.1)`` starts a lot's description: its title, then its number ("Lot No: 2");
    the lot's ``II.2.6)`` gives its value. Descriptions without numbers are not lots (a contract
    not divided into lots has one such description)."""
    lots: list[FormLot] = []
    starts = [k for k, s in enumerate(sections) if s.key == TED_SECTIONS["lot"]]
    for n, k in enumerate(starts):
        s = sections[k]
        stop = starts[n + 1] if n + 1 < len(starts) else len(sections)
        block = [b for b in sections[k:stop] if b.key.startswith("II.2")]
        text, last = _section_text(lines, s, limit=3)
        number: int | None = None
        if last == s.line and (inline_no := _INLINE_LOT_NUMBER.search(text)):
            # "Title: Road salt Lot No: 1": the title, then the lot's number on the same line.
            number, text = int(inline_no.group("num")), text[: inline_no.start()]
        if number is None:
            number = next(
                (
                    int(v)
                    for i, _label, v in _labelled_lines(lines, s)
                    if i > last and re.fullmatch(r"\d{1,6}", v)
                ),
                None,
            )
        title = _clean_text_value(text)
        if number is None or number < 1 or not title:
            continue
        value = None
        for b in block:
            if b.key == TED_SECTIONS["lot_value"]:
                found = _amount_in(_body(lines, b, limit=3), currency)
                value = found[0] if found else None
        lots.append(FormLot(number, title, value, s.line))
    numbers = [lot.number for lot in lots]
    return lots if len(set(numbers)) == len(numbers) else []


# --------------------------------------------------------------------------------------------
# BOAMP avis: fields by their headings.
# --------------------------------------------------------------------------------------------

#: The headings of a BOAMP avis d'appel public à la concurrence, per field (accents and case
#: folded when compared).
BOAMP_HEADINGS: dict[str, tuple[str, ...]] = {
    "authority": (
        "nom et adresse officiels de l'organisme acheteur",
        "identification de l'organisme qui passe le marche",
    ),
    "title": ("objet du marche", "objet de l'accord-cadre", "intitule du marche"),
    "reference": (
        "numero de reference attribue au marche par le pouvoir adjudicateur / l'entite "
        "adjudicatrice",
        "numero de reference attribue au marche par le pouvoir adjudicateur",
        "numero de reference attribue au marche",
        "reference du marche",
    ),
    "deadline": (
        "date limite de reception des offres ou des demandes de participation",
        "date limite de reception des offres",
        "date limite de reception des candidatures",
        "date et heure limites de reception des offres",
    ),
    "value": (
        "valeur estimee hors tva",
        "valeur totale estimee hors tva",
        "estimation de la valeur totale hors tva",
    ),
    "cpv": ("cpv - objet principal", "c.p.v. - objet principal", "objets supplementaires"),
    "lots": ("renseignements relatifs aux lots",),
    "divided": ("prestations divisees en lots",),
}
#: What marks a document as a BOAMP avis (one of them, and two headings of the table).
BOAMP_MARKS = ("avis d'appel public a la concurrence", "boamp")

_BOAMP_LABEL = re.compile(r"^[-•*\s]*(?P<label>[^\W\d_][^:]{1,140}?)\s+:\s*(?P<value>.*)$")
_BOAMP_LOT = re.compile(
    r"^lot\(s\)\s+(?:(?P<num>\d{1,3})\s*\.?\s*-\s*)?(?P<title>.*?)\s*(?:\.\s*-?\s*)?$", re.I
)


def _boamp_field(label: str) -> str | None:
    key = fold(label).strip()
    for name, headings in BOAMP_HEADINGS.items():
        if any(key == h or key.startswith(h + " (") for h in headings):
            return name
    return None


def _boamp_value(lines: Sequence[str], i: int, value: str, *, limit: int = 4) -> tuple[str, int]:
    """A heading's value: on its line, else the next; it runs on over wrapped lines until it
    ends with a full stop or the next heading starts."""
    parts = [value] if value else []
    last = i
    for j in range(i + 1, min(len(lines), i + 1 + limit)):
        if parts and parts[-1].rstrip().endswith("."):
            break
        nxt = lines[j]
        if not nxt or _BOAMP_LABEL.match(nxt) or _BOAMP_LOT.match(nxt):
            break
        parts.append(nxt)
        last = j
    return " ".join(parts).strip(), last


def read_boamp(lines: Sequence[str]) -> FormReading | None:
    head = fold(" ".join(lines[:60]))
    found: list[tuple[str, int, str]] = []
    for i, line in enumerate(lines):
        m = _BOAMP_LABEL.match(line)
        if m and (name := _boamp_field(m.group("label"))) is not None:
            found.append((name, i, m.group("value").strip()))
    if not any(mark in head for mark in BOAMP_MARKS) or len({n for n, _, _ in found}) < 3:
        return None
    out = FormReading("BOAMP avis")
    # Only the headings that are there own their fields: a newer avis words them otherwise.
    out.owned = {name for name, _, _ in found} | (
        {"lots"} if any(name == "divided" for name, _, _ in found) else set()
    )
    codes: list[str] = []
    cpv_line: int | None = None
    undivided = False
    for name, i, raw in found:
        value, last = _boamp_value(lines, i, raw)
        text = _clean_text_value(value.rstrip(". ")) if value else None
        rule = "BOAMP heading"
        if name == "title" and text and out.title is None:
            out.title = (text, _ev(i, rule))
        elif name == "authority" and text and out.authority is None:
            out.authority = (text, _ev(i, rule))
        elif name == "reference" and text and out.reference is None:
            ref = _reference_from(text)
            if ref:
                out.reference = (ref, _ev(i, rule))
        elif name == "deadline" and value and out.deadline is None:
            when = _parse_deadline(value)
            if when is not None:
                out.deadline = (when, _ev(i, rule))
        elif name == "value" and value and out.value is None:
            found_amount = _amount_in(value, _document_currency("\n".join(lines)))
            if found_amount is not None:
                out.value = (found_amount[0], found_amount[1], _ev(i, rule))
        elif name == "cpv":
            # The codes of a heading, and the lines of bare codes under it.
            block = [value]
            for j in range(last + 1, min(len(lines), last + 6)):
                if not re.fullmatch(r"[\d\s.,;-]+", lines[j] or "x"):
                    break
                block.append(lines[j])
            for code in cpv_codes_in("\n".join(block), labelled=True):
                if code[:8] not in {c[:8] for c in codes}:
                    codes.append(code)
                    cpv_line = i if cpv_line is None else cpv_line
        elif name == "lots":
            out.lots = _boamp_lots(lines, i)
        elif name == "divided":
            undivided = fold(value).startswith("non")
    if undivided:
        out.lots = []  # "Prestations divisées en lots : non": whatever reads like a lot is not
    if codes and cpv_line is not None:
        out.cpv = (codes, _ev(cpv_line, "BOAMP CPV headings"))
    # The buyer's correspondent follows the buyer's name: its address is the contact.
    if out.authority is not None:
        start = out.authority[1].line
        for i in range(start, min(len(lines), start + 4)):
            email = email_in(lines[i])
            if email:
                out.email = (email, _ev(i, "BOAMP correspondent"))
                break
            if (
                i > start
                and _BOAMP_LABEL.match(lines[i])
                and not fold(lines[i]).startswith("correspondant")
            ):
                break
    return out


def _boamp_lots(lines: Sequence[str], start: int) -> list[FormLot]:
    """ "Lot(s) 2. - transports sur circuits courts." per lot; where no heading has a number,
    the lots are numbered in their order."""
    lots: list[tuple[int | None, str, int]] = []
    for i in range(start + 1, len(lines)):
        m = _BOAMP_LOT.match(lines[i])
        if not m:
            continue
        title = m.group("title").strip()
        num = int(m.group("num")) if m.group("num") else None
        if num is None and re.fullmatch(r"\d{1,3}", title):
            num, title = int(title), ""  # "Lot(s) 1" with the title on the lines below
        if not re.search(r"[^\W\d_]", title):
            # "Lot(s) 1. -" over "Véhicule utilitaire ...": the title is printed below its
            # number, up to the lot's next heading ("Durée :"); a number alone names nothing.
            title = _boamp_value(lines, i, "")[0] if num is not None else ""
        # A title that wraps: the next line, in lower case, goes on with it.
        elif not lines[i].rstrip().endswith((".", "-")) and i + 1 < len(lines):
            nxt = lines[i + 1]
            if nxt[:1].islower() and not _BOAMP_LABEL.match(nxt):
                title = f"{title} {nxt}".rstrip(". -")
        clean = _clean_text_value(title.rstrip(". -"))
        if clean:
            lots.append((num, clean, i))
        elif num is not None:
            return []  # a lot whose title could not be read: the list would be incomplete
    if not lots:
        return []
    if all(n is None for n, _, _ in lots):
        return [FormLot(k, t, None, i) for k, (_, t, i) in enumerate(lots, start=1)]
    if any(n is None for n, _, _ in lots):
        return []
    numbers = [n for n, _, _ in lots]
    if len(set(numbers)) != len(numbers):
        return []
    return [FormLot(n, t, None, i) for n, t, i in lots if n is not None]


#: The forms, tried in order: the first that matches reads the document.
FORMS = (read_ted, read_boamp)


def read_form(lines: Sequence[str]) -> FormReading | None:
    for reader in FORMS:
        reading = reader(lines)
        if reading is not None:
            return reading
    return None
