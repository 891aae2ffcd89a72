"""The fields of a notice, each from its own rule, and the entry point."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TypeAlias, TypeVar

from stages.extract_offline.amounts import _amount_after_label, _document_currency
from stages.extract_offline.codes import _cpv_codes, _email, _reference
from stages.extract_offline.dates import _parse_deadline
from stages.extract_offline.labels import (
    _AUTHORITY_LABELS,
    _AUTHORITY_WORDS,
    _CONNECTOR_END,
    _DEADLINE_EXCLUDE,
    _DEADLINE_GENERIC,
    _DEADLINE_SPECIFIC,
    _DEADLINE_STOP,
    _INLINE_LOT_NO,
    _LOT_HEADER,
    _LOT_MENTION,
    _NOTICE_HEADING,
    _TITLE_LABELS,
    _TOTAL_VALUE_LABELS,
    _VALUE_LABELS,
    vocabulary,
)
from stages.extract_offline.lines import _continue_value, _find_labelled, _looks_like_label
from stages.extract_offline.lots import _lots
from stages.extract_offline.normalise import _clean_text_value, _normalise, _words
from stages.tender import FieldEvidence, Lot, TenderExtraction, TenderFields


def _complete_from_heading(lines: Sequence[str], title: str) -> str:
    """A labelled title cut short by a bad line break, completed from the notice's heading.

    Notices usually repeat the title as a heading near the top; when such a line starts with the
    labelled value and goes on, the labelled value was truncated.
    """
    key = _words(title)
    best = title
    for line in [ln for ln in lines if ln][:25]:
        cand = _clean_text_value(line)
        if not cand or len(cand) > 160 or _looks_like_label(line):
            continue
        words = _words(cand)
        if words.startswith(key + " ") and len(cand) > len(best):
            best = cand
        elif len(words.split()) >= 3 and key.startswith(words + " "):
            # The labelled copy carries a speck of noise the heading does not ("... ma").
            tail = key[len(words) :].split()
            if len(tail) <= 2 and all(len(t) <= 3 for t in tail):
                best = cand
    return best


def _title(lines: Sequence[str], lot_lines: set[int], authority: str | None) -> _Result[str]:
    not_lot = re.compile(r"^(?!lot\b)", re.I)
    hit = _find_labelled(lines, _TITLE_LABELS, skip=lot_lines, accept=not_lot)
    if hit is not None:
        value = _clean_text_value(_INLINE_LOT_NO.sub("", hit.value))
        if not value:
            return None, None
        return _complete_from_heading(lines, value), _Ev(hit.index, "label", 0.9)
    # "INVITATION TO TENDER for the supply of ..." or the heading followed by the title line.
    for i, line in enumerate(lines[:15]):
        m = _NOTICE_HEADING.match(line)
        if not m:
            continue
        rest = re.sub(r"^\s*[:\-]?\s*", "", m.group("rest"))
        if re.match(r"(?:for|:)\s", rest, re.I):
            value = _clean_text_value(re.sub(r"^(?:for|:)\s+(?:the\s+)?", "", rest, flags=re.I))
            return value, _Ev(i, "notice heading", 0.7)
        for j in range(i + 1, min(i + 6, len(lines))):
            cand = lines[j]
            # Skip "Open procedure - Works", "Services" and the authority's name.
            if (
                len(cand.split()) < 3
                or re.search(r"\bprocedure\b", cand, re.I)
                or (authority and _words(cand) == _words(authority))
            ):
                continue
            if _looks_like_label(cand) or _NOTICE_HEADING.match(cand) or j in lot_lines:
                break
            if re.match(r"^(?:for\s+)(?:the\s+)?", cand, re.I):
                cand = re.sub(r"^for\s+(?:the\s+)?", "", cand, flags=re.I)
            hit2 = _continue_value(lines, j, cand)
            return _clean_text_value(hit2.value), _Ev(j, "line under the notice heading", 0.6)
        break
    return None, None


def _mixed_case(lines: Sequence[str], value: str) -> str:
    """A name printed in capitals in a heading, as the running text spells it, if it does."""
    pattern = re.compile(r"\b" + r"\s+".join(map(re.escape, value.split())) + r"\b", re.I)
    for line in lines:
        for m in pattern.finditer(line):
            if not m.group().isupper():
                return m.group()
    return value


def _authority(lines: Sequence[str]) -> _Result[str]:
    hit = _find_labelled(lines, _AUTHORITY_LABELS, wrap=False)
    value: str | None = None
    ev: _Ev | None = None
    if hit is not None:
        value = hit.value
        ev = _Ev(hit.index, "label", 0.9)
        # Wrapped only when the break is evidently mid-name.
        end = hit.end
        while end + 1 < len(lines) and lines[end + 1] and not _looks_like_label(lines[end + 1]):
            if not (lines[end + 1][0].islower() or _CONNECTOR_END.search(value.rstrip(","))):
                break
            value = f"{value} {lines[end + 1]}"
            end += 1
    else:
        # No label: a header line naming a public body, above the notice heading.
        for n, line in [(n, ln) for n, ln in enumerate(lines) if ln][:6]:
            if _NOTICE_HEADING.match(line) or _looks_like_label(line):
                break
            if _AUTHORITY_WORDS.search(line) and len(line) <= 90 and not re.search(r"\d", line):
                value, ev = line, _Ev(n, "letterhead", 0.6)
                break
    if value is None or ev is None:
        return None, None
    if value.isupper():
        value = _mixed_case(lines, value)
    # Cut the postal address that often follows the name on the same line.
    parts = [p.strip() for p in value.split(",")]
    kept = [parts[0]]
    for part in parts[1:]:
        if re.search(r"\d", part) or "@" in part:
            break
        kept.append(part)
    return _clean_text_value(", ".join(kept)), ev


def _deadline(lines: Sequence[str]) -> _Result[datetime]:
    def window(i: int, start: int) -> str:
        parts = [lines[i][start:]]
        for j in range(i + 1, min(i + 8, len(lines))):
            if not lines[j]:
                continue  # OCR's blank lines between "Date:" and "Local time:" do not count
            if len(parts) == 4 or _DEADLINE_STOP.search(lines[j]) or _LOT_HEADER.match(lines[j]):
                break
            parts.append(lines[j])
        return "\n".join(parts)

    # A label that opens its line ("Closing date: ...") beats the same words inside prose
    # ("... no later than ten days before the closing date, i.e. 5 March").
    for opening in (True, False):
        for pattern in _DEADLINE_SPECIFIC:
            for i, line in enumerate(lines):
                m = pattern.search(line)
                if not m or (m.start() <= 14) != opening:
                    continue
                if _DEADLINE_EXCLUDE.search(line[: m.start()] + line[m.end() :][:30]):
                    continue
                found = _parse_deadline(window(i, m.end()))
                if found is not None:
                    rule = "label" if opening else "label in running text"
                    return found, _Ev(i, rule, 0.9 if opening else 0.75, span=2)
    for i, line in enumerate(lines):
        m = _DEADLINE_GENERIC.search(line)
        if m and not _DEADLINE_EXCLUDE.search(line):
            found = _parse_deadline(window(i, m.end()))
            if found is not None:
                return found, _Ev(i, "the word deadline", 0.6, span=2)
    return None, None


def _estimated_value(
    lines: Sequence[str], lot_lines: set[int], text: str
) -> tuple[Decimal | None, str | None, _Ev | None]:
    doc_currency = _document_currency(text)
    for pattern, require_free in ((_TOTAL_VALUE_LABELS, False), (_VALUE_LABELS, True)):
        for i, line in enumerate(lines):
            if i in lot_lines:
                continue
            m = pattern.search(line)
            if not m:
                continue
            if require_free and (_LOT_MENTION.search(line) or _TOTAL_VALUE_LABELS.search(line)):
                continue
            if _LOT_HEADER.match(line):
                continue
            got = _amount_after_label(lines, i, m.end(), doc_currency)
            # No contract is worth less than 100: such a reading is a footnote mark, a
            # percentage or an OCR fragment, and not worth reporting.
            if got is not None and got[0] >= 100:
                total = pattern is _TOTAL_VALUE_LABELS
                ev = _Ev(
                    i, "total value label" if total else "value label", 0.9 if total else 0.75, 1
                )
                return got[0], got[1], ev
    return None, None, None


def extract_offline(text: str) -> TenderFields:
    """Extract tender fields from OCR text with rules only; unknown fields stay None/empty."""
    return extract_offline_explained(text).fields()


def extract_offline_explained(text: str | Sequence[str]) -> TenderExtraction:
    """The fields with their evidence; ``text`` is the document, or its pages in order.

    A field whose confidence ends below ``MIN_CONFIDENCE`` is left empty (its candidate is kept
    in the evidence as ``rejected``): a missing value costs a look, a wrong one costs a bid.
    """
    pages = [text] if isinstance(text, str) else list(text)
    lines: list[str] = []
    page_of: list[int] = []
    for number, page in enumerate(pages, start=1):
        page_lines = _normalise(page)
        lines += page_lines
        page_of += [number] * len(page_lines)
        if len(lines) >= MAX_LINES:
            break
    warnings = _input_warnings(lines)
    if len(lines) > MAX_LINES:
        warnings.append(f"only the first {MAX_LINES} lines were read")
    lines, page_of = lines[:MAX_LINES], page_of[:MAX_LINES]
    joined = "\n".join(lines)
    evidence: dict[str, FieldEvidence] = {}

    def keep(
        name: str, value: _V | None, ev: _Ev | None, *, penalty: str | None = None
    ) -> _V | None:
        if value is None or value == [] or ev is None:
            return None
        confidence = ev.confidence
        if penalty is not None:
            confidence = min(confidence, 0.3)
        if warnings and _GARBAGE in warnings[0]:
            confidence = min(confidence, 0.2)
        line = lines[ev.line] if 0 <= ev.line < len(lines) else None
        if line is not None and ev.span:
            after = [ln for ln in lines[ev.line + 1 : ev.line + 1 + 2 * ev.span] if ln]
            line = " | ".join([line, *after[: ev.span]])
        record = FieldEvidence(
            confidence=confidence,
            rule=ev.rule,
            source=line[:300] if line is not None else None,
            line=ev.line + 1 if line is not None else None,
            page=page_of[ev.line] if line is not None else None,
            note=penalty,
        )
        if confidence < MIN_CONFIDENCE:
            evidence[name] = record.model_copy(update={"rejected": str(value)[:300]})
            return None
        evidence[name] = record
        return value

    drafts, lot_lines = _lots(lines)
    value, currency, value_ev = _estimated_value(lines, lot_lines, joined)
    lots = [Lot(number=d.number, title=d.title or "", estimated_value=d.value) for d in drafts]
    lot_sum = sum((lot.estimated_value or 0 for lot in lots), Decimal(0))
    value_penalty = None
    if value is not None and lot_sum > value * Decimal("1.001"):
        value_penalty = "the lots' values add up to more than this total"
    value = keep("estimated_value", value, value_ev, penalty=value_penalty)
    authority, authority_ev = _authority(lines)
    authority = keep("issuing_authority", authority, authority_ev, penalty=_suspicious(authority))
    title, title_ev = _title(lines, lot_lines, authority)
    reference = _reference(lines)
    deadline, deadline_ev = _deadline(lines)
    cpv = _cpv_codes(joined)
    email = _email(joined, authority)
    fields = TenderExtraction(
        title=keep("title", title, title_ev, penalty=_suspicious(title)),
        issuing_authority=authority,
        reference=keep("reference", reference, _locate(lines, reference, "label", 0.85)),
        submission_deadline=keep("submission_deadline", deadline, deadline_ev),
        estimated_value=value,
        currency=currency if value is not None else None,
        cpv_codes=keep("cpv_codes", cpv, _locate(lines, cpv[0][:8] if cpv else None, "CPV", 0.9))
        or [],
        lots=keep("lots", lots, _Ev(min(drafts[0].lines), "lot blocks", 0.8) if drafts else None)
        or [],
        contact_email=keep("contact_email", email, _locate(lines, email, "e-mail", 0.8)),
        warnings=warnings,
        extractor="offline",
    )
    if fields.currency is not None and "estimated_value" in evidence:
        evidence["currency"] = evidence["estimated_value"]
    if not any(getattr(fields, f) not in (None, []) for f in TenderFields.model_fields):
        fields.warnings.append("no tender fields found: is this a tender notice?")
    fields.evidence = evidence
    return fields


#: Lines read at most (a page of a notice has about 60): bounds the work on absurd input.
MAX_LINES = 20_000
#: A field kept with less confidence than this would be a guess: it is left empty.
MIN_CONFIDENCE = 0.5
_GARBAGE = "garbage"

_V = TypeVar("_V")


@dataclass(frozen=True)
class _Ev:
    line: int  # index into the normalised lines
    rule: str
    confidence: float
    span: int = 0  # lines after the label line that the value was read from


_Result: TypeAlias = tuple[_V | None, _Ev | None]

# A value that swallowed the next field's label ("Commune de Intitulé du marché : ...") was
# read across a column or a line break that went wrong.
_FOREIGN_LABEL = re.compile(
    r"\S\s+(?:"
    + "|".join(vocabulary("title") + vocabulary("authority") + vocabulary("reference"))
    + r")\s*:|\w\s:\s\S",
    re.I,
)


def _suspicious(value: str | None) -> str | None:
    if value is None:
        return None
    if _FOREIGN_LABEL.search(value):
        return "the value runs into another label"
    if _CONNECTOR_END.search(value) and not value.endswith(")"):
        return "the value ends mid-phrase, as if cut short"
    return None


def _locate(lines: Sequence[str], needle: str | None, rule: str, confidence: float) -> _Ev | None:
    """The first line where a value was printed (compared without spaces and case)."""
    if not needle:
        return None
    key = re.sub(r"\s", "", needle).lower()
    for i, line in enumerate(lines):
        if key in re.sub(r"\s", "", line).lower():
            return _Ev(i, rule, confidence)
    return _Ev(-1, rule, confidence * 0.9)


def _input_warnings(lines: Sequence[str]) -> list[str]:
    """What makes the text unlikely to hold what the rules look for: said, not guessed around."""
    text = " ".join(lines)
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return ["the document has no text (a blank or unreadable scan?)"]
    latin = sum("LATIN" in unicodedata.name(c, "") for c in letters[:20_000])
    if latin < 0.6 * min(len(letters), 20_000):
        return ["the text is mostly in a script the rules do not read (not Latin)"]
    words = re.findall(r"[^\W\d_]+", text[:200_000])
    wordlike = sum(bool(_WORDLIKE.fullmatch(w)) for w in words)
    if len(words) >= 20 and wordlike < 0.5 * len(words):
        return [f"the text looks like OCR {_GARBAGE}: few word-like tokens"]
    return []


_WORDLIKE = re.compile(r"(?i:[a-zß-ÿ]*[aeiouyàâäéèêëîïôöûüÿ][a-zß-ÿ]*)|[A-Z]{2,6}")
