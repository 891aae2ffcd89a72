"""TED eForms notices read as structures: numbered sections, and labels per language.

An eForms notice (TED since 2023) prints its sections by number, the same in every language:
``1.1`` the buyer, ``2.1`` the procedure (its title and internal identifier), ``2.1.1`` its
classification, ``2.1.3`` its value, ``5.1 Lot: LOT-0001`` each lot (``5.1.1`` classification,
``5.1.5`` value, ``5.1.12`` terms, with the deadline), ``8.1 ORG-0001`` each organisation with its
e-mail and roles. Inside a section a field is a label and its value ("Official name: X"), the
label in the notice's language: those are data, in ``EFORMS_LABELS``. A notice is read so only
when it has the numbered procedure section and the ``LOT-``/``ORG-`` identifiers eForms gives.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pg_pipeline_documents.extract_offline.amounts import _document_currency
from pg_pipeline_documents.extract_offline.codes import _reference_from, cpv_codes_in, email_in
from pg_pipeline_documents.extract_offline.concepts import fold
from pg_pipeline_documents.extract_offline.dates import _parse_deadline
from pg_pipeline_documents.extract_offline.evidence import _Ev
from pg_pipeline_documents.extract_offline.forms import FormLot, FormReading, _amount_in, _ev
from pg_pipeline_documents.extract_offline.normalise import _clean_text_value

#: The labels of the fields inside the sections, per field, in English, French, German,
#: Italian, Spanish and Dutch (folded: lower case, no accents), as the eForms viewer prints them.
EFORMS_LABELS: dict[str, tuple[str, ...]] = {
    "name": (
        "official name",
        "nom officiel",
        "offizielle bezeichnung",
        "denominazione ufficiale",
        "nombre oficial",
        "officiele naam",
    ),
    "title": ("title", "titre", "titel", "titolo", "titulo"),
    "reference": (
        "internal identifier",
        "identifiant interne",
        "interne kennung",
        "identificativo interno",
        "identificador interno",
        "interne identificatiecode",
    ),
    "value": (
        "estimated value excluding vat",
        "valeur estimee hors tva",
        "geschatzter wert ohne mwst",
        "valore stimato, iva esclusa",
        "valor estimado sin iva",
        "geraamde waarde zonder btw",
    ),
    "deadline": (
        "deadline for receipt of tenders",
        "date limite de reception des offres",
        "frist fur den eingang der angebote",
        "termine per il ricevimento delle offerte",
        "plazo de recepcion de ofertas",
        "termijn voor de ontvangst van inschrijvingen",
    ),
    "deadline_requests": (
        "deadline for receipt of requests to participate",
        "date limite de reception des demandes de participation",
        "frist fur den eingang der teilnahmeantrage",
        "termine per il ricevimento delle domande di partecipazione",
        "plazo de recepcion de solicitudes de participacion",
    ),
    "cpv": (
        "main classification",
        "additional classification",
        "classification principale",
        "classification complementaire",
        "haupteinstufung",
        "zusatzliche einstufung",
        "classificazione principale",
        "classificazione complementare",
        "clasificacion principal",
        "clasificacion complementaria",
        "hoofdclassificatie",
        "aanvullende classificatie",
    ),
    "email": ("email", "e-mail", "adresse electronique", "courriel", "posta elettronica"),
    "roles": (
        "roles of this organisation",
        "roles de cette organisation",
        "rollen dieser organisation",
        "ruoli di questa organizzazione",
        "funciones de esta organizacion",
    ),
    "buyer_role": ("buyer", "acheteur", "beschaffer", "acquirente", "comprador"),
}

#: The sections, by number: the buyer, the procedure (with its subsections 2.1.1 purpose and
#: classification, 2.1.3 value), each lot (5.1.1, 5.1.5 value, 5.1.12 terms and deadline) and
#: each organisation.
EFORMS_SECTIONS = {"buyer": "1.1", "procedure": "2.1", "lot": "5.1", "organisation": "8.1"}

# "2.1 Procedure", "5.1.12. Public procurement terms", "1. Buyer" (a single number needs its dot).
_SECTION = re.compile(
    r"^(?P<key>\d{1,2}(?:\.\d{1,2}){1,3}|\d{1,2}(?=\.))\.?\s+(?P<head>[^\W\d_].{0,120})$"
)
# The identifiers eForms gives lots and organisations.
_LOT_ID = re.compile(r"\bLOT-(?P<num>\d{4})\b")
_ORG_ID = re.compile(r"\bORG-\d{4}\b")


@dataclass(frozen=True)
class _Section:
    key: str
    head: str
    line: int
    end: int  # the next section's line


def _sections(lines: Sequence[str]) -> list[_Section]:
    found = [
        (i, m.group("key"), m.group("head"))
        for i, ln in enumerate(lines)
        if (m := _SECTION.match(ln))
    ]
    return [
        _Section(key, head.strip(), i, found[k + 1][0] if k + 1 < len(found) else len(lines))
        for k, (i, key, head) in enumerate(found)
    ]


def _within(key: str, prefix: str) -> bool:
    """Whether section ``key`` is ``prefix`` or one of its subsections."""
    return key == prefix or key.startswith(prefix + ".")


def _names(label: str, field: str) -> bool:
    """Whether a label is the field's (its last words, so "Procedure Title" is a title)."""
    key = re.sub(r"\s+", " ", fold(label)).strip(" .:")
    key = re.sub(r"\s*\((?:cpv)\)$", "", key)
    return any(key == h or key.endswith(" " + h) for h in EFORMS_LABELS[field])


def _pairs_of(
    lines: Sequence[str], s: _Section, end: int | None = None
) -> list[tuple[int, str, str]]:
    """The label/value pairs of a section: its head's ("Buyer Official name: X"), then one a
    line ("Deadline for receipt of tenders: 04/10/2026 10:00:00 (UTC+02:00)")."""
    found = [(s.line, *pair) for pair in _pair(s.head)]
    for i in range(s.line + 1, s.end if end is None else end):
        found += [(i, *pair) for pair in _pair(lines[i])]
    return found


def _pair(line: str) -> list[tuple[str, str]]:
    m = _LABEL_VALUE.match(line)
    if m is None or len(m.group("label").split()) > MAX_LABEL_WORDS:
        return []
    return [(m.group("label").strip(), (m.group("value") or "").strip())]


#: A label has a few words; a line with more before its colon is a sentence.
MAX_LABEL_WORDS = 10
# A label and its value: the label up to the line's first colon that a blank follows.
_LABEL_VALUE = re.compile(r"^(?P<label>[^\W\d_][^:]{0,100}?)\s*:(?:\s+(?P<value>.*))?$")


def _value_of(
    lines: Sequence[str],
    pairs: Sequence[tuple[int, str, str]],
    field: str,
    end: int,
    *,
    wraps: bool = False,
) -> tuple[str, int] | None:
    """The first value labelled for ``field``; with ``wraps``, and the lines below it that
    carry on (a title that wraps) up to the next label or section."""
    for k, (i, label, value) in enumerate(pairs):
        if not _names(label, field):
            continue
        if not wraps or (k + 1 < len(pairs) and pairs[k + 1][0] == i):
            return value.strip(), i  # another label on the same line: the value ends there
        stop = min(pairs[k + 1][0] if k + 1 < len(pairs) else end, end, i + 4)
        rest: list[str] = []
        for line in lines[i + 1 : stop]:
            if not line or _SECTION.match(line):
                break
            rest.append(line)
        return " ".join([value, *rest]).strip(), i
    return None


def is_eforms(lines: Sequence[str], sections: Sequence[_Section]) -> bool:
    keys = {s.key for s in sections}
    marked = any(
        (s.key == EFORMS_SECTIONS["lot"] and _LOT_ID.search(s.head))
        or (s.key == EFORMS_SECTIONS["organisation"] and _ORG_ID.search(s.head))
        for s in sections
    )
    return marked and EFORMS_SECTIONS["procedure"] in keys and EFORMS_SECTIONS["buyer"] in keys


def read_eforms(lines: Sequence[str]) -> FormReading | None:
    sections = _sections(lines)
    if not is_eforms(lines, sections):
        return None
    out = FormReading("eForms notice")
    currency = _document_currency("\n".join(lines))
    first: dict[str, _Section] = {}
    for s in sections:
        first.setdefault(s.key, s)
    # The places an eForms notice always has: an empty one is an answer.
    out.owned = {"title", "authority", "reference", "value", "cpv", "lots"}

    if buyer := first.get(EFORMS_SECTIONS["buyer"]):
        pairs = _pairs_of(lines, buyer)
        if found := _value_of(lines, pairs, "name", buyer.end):
            name = _clean_text_value(found[0])
            if name:
                out.authority = (name, _ev(found[1], "eForms section 1.1"))
        if found := _value_of(lines, pairs, "email", buyer.end):
            email = email_in(found[0])
            if email:
                out.email = (email, _ev(found[1], "eForms section 1.1"))

    # The procedure's part (2.1 and its subsections, which a short print leaves out).
    procedure = [s for s in sections if _within(s.key, EFORMS_SECTIONS["procedure"])]
    pairs = [p for s in procedure for p in _pairs_of(lines, s)]
    end = procedure[-1].end if procedure else 0
    if found := _value_of(lines, pairs, "title", end, wraps=True):
        title = _clean_text_value(found[0])
        if title:
            out.title = (title, _ev(found[1], "eForms section 2.1"))
    if found := _value_of(lines, pairs, "reference", end):
        ref = _identifier(found[0])
        if ref:
            out.reference = (ref, _ev(found[1], "eForms section 2.1"))
    found = _value_of(lines, pairs, "value", end)
    amount = _amount_in(found[0], currency) if found else None
    if found and amount is not None:
        out.value = (amount[0], amount[1], _ev(found[1], "eForms section 2.1.3"))

    codes: list[str] = []
    cpv_line: int | None = None
    for s in sections:
        if not any(_within(s.key, EFORMS_SECTIONS[part]) for part in ("procedure", "lot")):
            continue
        for i, label, raw in _pairs_of(lines, s):
            if not _names(label, "cpv"):
                continue
            for code in cpv_codes_in(raw, labelled=True):
                if code[:8] not in {c[:8] for c in codes}:
                    codes.append(code)
                    cpv_line = i if cpv_line is None else cpv_line
    if codes and cpv_line is not None:
        out.cpv = (codes, _ev(cpv_line, "eForms sections 2.1.1 and 5.1.1"))

    out.lots, deadline = _lots(lines, sections, currency)
    if deadline is not None:
        out.deadline = deadline
        out.owned.add("deadline")

    orgs = [
        s for s in sections if s.key == EFORMS_SECTIONS["organisation"] and _ORG_ID.search(s.head)
    ]
    if out.email is None and orgs:
        out.owned.add("email")
        out.email = _buyer_email(lines, orgs, out.authority[0] if out.authority else None)
    return out


_Deadline = tuple[datetime, _Ev]


def _lots(
    lines: Sequence[str], sections: Sequence[_Section], currency: str | None
) -> tuple[list[FormLot], _Deadline | None]:
    """Each ``5.1 Lot: LOT-0001`` block's title and value, and the first deadline for tenders
    (or, in a procedure that asks for requests first, for requests to participate).

    ``LOT-0000`` is the one lot of a procedure not divided into lots: no lot is given then."""
    starts = [
        k
        for k, s in enumerate(sections)
        if s.key == EFORMS_SECTIONS["lot"] and _LOT_ID.search(s.head)
    ]
    lots: list[FormLot] = []
    deadlines: dict[str, _Deadline] = {}
    for n, k in enumerate(starts):
        s = sections[k]
        stop = starts[n + 1] if n + 1 < len(starts) else len(sections)
        block = [b for b in sections[k:stop] if _within(b.key, EFORMS_SECTIONS["lot"])]
        end = block[-1].end
        lot_id = _LOT_ID.search(s.head)
        number = int(lot_id.group("num")) if lot_id else 0
        found = _value_of(lines, _pairs_of(lines, s), "title", s.end, wraps=True)
        title = _clean_text_value(found[0]) if found else None
        pairs = [p for b in block for p in _pairs_of(lines, b)]
        got = _value_of(lines, pairs, "value", end)
        amount = _amount_in(got[0], currency) if got else None
        value = amount[0] if amount else None
        for field in ("deadline", "deadline_requests"):
            if field in deadlines:
                continue
            if got := _value_of(lines, pairs, field, end):
                when = _parse_deadline(got[0])
                if when is not None:
                    deadlines[field] = (when, _ev(got[1], "eForms section 5.1.12"))
        if number >= 1 and title:
            lots.append(FormLot(number, title, value, s.line))
        elif number >= 1:
            return [], deadlines.get("deadline") or deadlines.get("deadline_requests")
    numbers = [lot.number for lot in lots]
    if len(set(numbers)) != len(numbers):
        lots = []
    return lots, deadlines.get("deadline") or deadlines.get("deadline_requests")


def _identifier(value: str) -> str | None:
    """The internal identifier as printed: the general reading, or else a value of one token
    with a digit ("VgV-27-031"): in its form's place, mixed case does not make it a word."""
    ref = _reference_from(value)
    if ref is not None:
        return ref
    token = value.strip().rstrip(".")
    if re.fullmatch(r"[^\s:]{3,40}", token) and re.search(r"\d", token):
        return token
    return None


def _buyer_email(
    lines: Sequence[str], orgs: Sequence[_Section], buyer: str | None
) -> tuple[str, _Ev] | None:
    """The e-mail of the organisation whose roles name it the buyer, or whose name is the
    buyer's; another organisation's (a review body's, the eSender's) is not the contact."""
    for org in orgs:
        pairs = _pairs_of(lines, org)
        name = _value_of(lines, pairs, "name", org.end)
        roles = _value_of(lines, pairs, "roles", org.end, wraps=True)
        role_words = set(re.findall(r"[a-z]+", fold(roles[0]))) if roles else set()
        is_buyer = bool(role_words & set(EFORMS_LABELS["buyer_role"]))
        same = buyer is not None and name is not None and fold(name[0]) == fold(buyer)
        if not (is_buyer or same):
            continue
        if found := _value_of(lines, pairs, "email", org.end):
            email = email_in(found[0])
            if email:
                return email, _ev(found[1], "eForms section 8.1")
    return None
