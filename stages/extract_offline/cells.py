"""Labels and their values as a page lays them out: beside, below, in table cells and form boxes.

With a page's layout, a label span ("Bid End Date/Time", "5. SOLICITATION NUMBER") is paired
with the span to its right on the same line, or with the span under it inside its column (a form
box prints its value under its label, and the text layer then interleaves a row of boxes). The
forms that are such tables are data, in ``CELL_FORMS``: GeM bid documents and the U.S. standard
solicitation forms. Without a layout, the same labels are read at the start of a text line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pg_pipeline_documents.extract_offline.amounts import (
    _amounts,
    _document_currency,
    _join_split_groups,
)
from pg_pipeline_documents.extract_offline.codes import _reference_from, email_in
from pg_pipeline_documents.extract_offline.concepts import fold
from pg_pipeline_documents.extract_offline.dates import _parse_deadline
from pg_pipeline_documents.extract_offline.evidence import _Ev
from pg_pipeline_documents.extract_offline.forms import FormReading
from pg_pipeline_documents.extract_offline.normalise import _clean_text_value, _fix_digit_o
from pg_pipeline_documents.layout import PageLayout, lines_of

#: How sure a value read from its form's cell is.
CELL_CONFIDENCE = 0.9
#: ... and one read from a cell that only stands for the field.
APPROXIMATE_CONFIDENCE = 0.7
#: A value beside its label stands no further right than this share of the page's width.
MAX_BESIDE = 0.5


@dataclass(frozen=True)
class Pair:
    label: str
    value: str
    page: int  # 0-based
    below: bool  # the value stood under its label, not beside it


def pairs_from_layout(layouts: Sequence[PageLayout | None]) -> list[Pair]:
    """Every span paired with what stands beside it (the next span on its line) and below it
    (the first span of the next line that overlaps its column), for the form readers to pick
    from by label."""
    out: list[Pair] = []
    for number, layout in enumerate(layouts):
        if layout is None:
            continue
        lines = lines_of(layout.spans)
        for k, line in enumerate(lines):
            for n, span in enumerate(line):
                if not re.search(r"[^\W\d_]", span.text) or len(span.text) > 120:
                    continue
                if n + 1 < len(line) and line[n + 1].x0 - span.x1 < MAX_BESIDE * layout.width:
                    out.append(Pair(span.text, line[n + 1].text, number, below=False))
                for nxt in lines[k + 1 : k + 3]:
                    if nxt[0].y0 - span.y1 > 2.5 * (span.size or 10):
                        break
                    under = [s for s in nxt if s.x0 < span.x1 and s.x1 > span.x0]
                    if under:
                        out.append(Pair(span.text, under[0].text, number, below=True))
                        break
    return out


@dataclass(frozen=True)
class CellForm:
    """A form of labelled cells: the marks that say a document is one (``min_marks`` of them in
    its first pages), and per field the labels of its cell, and whether its value stands under
    the label (``below``) or beside it."""

    name: str
    marks: tuple[str, ...]
    fields: dict[str, tuple[str, ...]]
    below: frozenset[str] = frozenset()
    min_marks: int = 2
    #: Numeric dates in the form's own order ("mdy" on U.S. forms).
    date_order: str | None = None
    #: The currency the form's amounts are in when they print none.
    currency: str | None = None
    #: Fields whose cell holds something close to the field, not the field itself: believed
    #: less (a GeM bid's item category stands for its title).
    approximate: frozenset[str] = frozenset()


CELL_FORMS = (
    CellForm(
        name="GeM bid document",
        marks=("gem", "government e marketplace", "bid end date", "bid number", "bid details"),
        fields={
            "reference": ("bid number", "bid no"),
            "deadline": ("bid end date/time", "bid end date"),
            "authority": ("organisation name", "organization name"),
            "title": ("item category", "items category"),
            "value": ("estimated bid value", "estimated value"),
        },
        min_marks=3,
        currency="INR",
        approximate=frozenset({"title"}),
    ),
    CellForm(
        name="U.S. SF 1449 solicitation",
        marks=(
            "solicitation/contract/order for commercial",
            "standard form 1449",
            "offer due date",
            "solicitation number",
        ),
        fields={
            "reference": ("solicitation number",),
            "deadline": ("offer due date/local time", "offer due date"),
            "authority": ("issued by",),
        },
        below=frozenset({"reference", "deadline", "authority"}),
        date_order="mdy",
    ),
    CellForm(
        name="U.S. SF 33 solicitation",
        marks=("solicitation, offer and award", "standard form 33", "solicitation number"),
        fields={
            "reference": ("solicitation number",),
            "authority": ("issued by",),
            "email": ("e-mail address", "email address"),
        },
        below=frozenset({"reference", "authority", "email"}),
        date_order="mdy",
    ),
)

# Section numbering and what other scripts a bilingual label carries ("Bid End Date/Time/बिड
# बंद होने की तारीख/समय"): neither is the label's wording.
_LEAD = re.compile(r"^[\W\d_]*(?:[a-z]\.\s+)?")
_OTHER_SCRIPT = re.compile(r"[^\x00-\u024f]+")


def _label_key(text: str) -> str:
    return re.sub(r"\s+", " ", _LEAD.sub("", fold(_OTHER_SCRIPT.sub(" ", text)))).strip(" :/")


def _cell_form(text: str) -> CellForm | None:
    head = fold(text[:20_000])
    for form in CELL_FORMS:
        if sum(mark in head for mark in form.marks) >= form.min_marks:
            return form
    return None


def _matches(label: str, wanted: tuple[str, ...]) -> bool:
    key = _label_key(label)
    return any(key == w or key.startswith(w + " ") or key.startswith(w + "/") for w in wanted)


def _text_pairs(lines: Sequence[str], wanted: tuple[str, ...]) -> list[tuple[int, str]]:
    """(line, value) for the lines that open with one of the labels: the rest of the line, or
    the next line when the label stands alone."""
    out = []
    for i, line in enumerate(lines):
        key = _label_key(line)
        for w in wanted:
            if key.startswith(w):
                m = re.search(re.escape(w).replace(r"\ ", r"\s+"), fold(line))
                rest = line[m.end() :] if m else ""
                rest = _OTHER_SCRIPT.sub(" ", rest).strip(" :|/-\t")
                if not rest:
                    rest = next((ln for ln in lines[i + 1 : i + 3] if ln), "")
                out.append((i, rest))
                break
    return out


def read_cell_form(
    lines: Sequence[str], layouts: Sequence[PageLayout | None] | None
) -> FormReading | None:
    """The fields of a document that is one of ``CELL_FORMS``, from its layout's cells where it
    has a layout, else from its text lines."""
    form = _cell_form("\n".join(lines[:2000]))
    if form is None:
        return None
    out = FormReading(form.name)
    currency = _document_currency("\n".join(lines)) or form.currency
    pairs = pairs_from_layout(layouts or [])
    for field, wanted in form.fields.items():
        below = field in form.below
        candidates = [
            (p.value, -1) for p in pairs if _matches(p.label, wanted) and p.below == below
        ] + [(value, i) for i, value in _text_pairs(lines, wanted)]
        for raw, line in candidates:
            found = _read(field, raw, currency, form.date_order)
            if found is None:
                continue
            confidence = APPROXIMATE_CONFIDENCE if field in form.approximate else CELL_CONFIDENCE
            ev = _Ev(line, f"{form.name}: {wanted[0]}", confidence)
            if field == "reference" and isinstance(found, str):
                out.reference = (found, ev)
            elif field == "deadline" and isinstance(found, datetime):
                out.deadline = (found, ev)
            elif field == "authority" and isinstance(found, str):
                out.authority = (found, ev)
            elif field == "title" and isinstance(found, str):
                out.title = (found, ev)
            elif field == "email" and isinstance(found, str):
                out.email = (found, ev)
            elif field == "value" and isinstance(found, tuple):
                out.value = (found[0], found[1], ev)
            out.owned.add(field)
            break
    return out


def _read(field: str, raw: str, currency: str | None, order: str | None) -> object | None:
    raw = raw.strip()
    if not raw:
        return None
    if field == "reference":
        return _reference_from(raw)
    if field == "deadline":
        return _parse_deadline(raw, order=order)
    if field == "email":
        return email_in(raw)
    if field == "value":
        found = [a for a in _amounts(_join_split_groups(_fix_digit_o(raw))) if a.value >= 100]
        return (found[0].value, found[0].currency or currency) if found else None
    value = _clean_text_value(raw)
    if value is None or not re.search(r"[^\W\d_]{3}", value) or len(value) > 200:
        return None
    return value
