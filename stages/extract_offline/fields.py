"""The fields of a notice, each from its own rule, and the entry point."""
# ruff: noqa: RUF001  (Cyrillic words are data here, not look-alikes)

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TypeVar

from pg_pipeline_documents.extract_offline.amounts import (
    _amount_after_label,
    _amounts,
    _document_currency,
    _label_part,
    local_dollar,
)
from pg_pipeline_documents.extract_offline.cells import read_cell_form
from pg_pipeline_documents.extract_offline.codes import (
    _cpv_codes,
    _email,
    _reference,
    restore_missing_at_lines,
)
from pg_pipeline_documents.extract_offline.concepts import labelled, names_lot
from pg_pipeline_documents.extract_offline.dates import _find_date, _parse_deadline
from pg_pipeline_documents.extract_offline.eforms import read_eforms
from pg_pipeline_documents.extract_offline.evidence import _Ev, _Result
from pg_pipeline_documents.extract_offline.forms import FormReading, read_form
from pg_pipeline_documents.extract_offline.furniture import running_lines, strip_furniture
from pg_pipeline_documents.extract_offline.headings import title_from_headings
from pg_pipeline_documents.extract_offline.labels import (
    _CONNECTOR_END,
    _DEADLINE_EXCLUDE,
    _DEADLINE_GENERIC,
    _DEADLINE_SPECIFIC,
    _DEADLINE_STOP,
    _LOT_HEADER,
    _LOT_MENTION,
    _NOT_VALUE,
    _NUMBERING,
    _TOTAL_VALUE_LABELS,
    _VALUE_LABELS,
    vocabulary,
)
from pg_pipeline_documents.extract_offline.lines import _cell_wrapped
from pg_pipeline_documents.extract_offline.lots import _LotDraft, _lots
from pg_pipeline_documents.extract_offline.names import (
    _authority,
    _mixed_case,
    _plausible_title,
    _title,
    reads_as_sentence,
    split_buyer_from_title,
)
from pg_pipeline_documents.extract_offline.normalise import (
    _clean_text_value,
    _normalise,
    _restore_eszett,
)
from pg_pipeline_documents.extract_offline.statements import (
    buyer_from_statements,
    title_from_invitation,
)
from pg_pipeline_documents.layout import PageLayout
from pg_pipeline_documents.tender import FieldEvidence, Lot, TenderExtraction, TenderFields


def _deadline(lines: Sequence[str]) -> _Result[datetime]:
    def window(i: int, start: int) -> str:
        parts = [lines[i][start:]]
        for j in range(i + 1, min(i + 8, len(lines))):
            if not lines[j]:
                continue  # OCR's blank lines between "Date:" and "Local time:" do not count
            if len(parts) == 4 or _LOT_HEADER.match(lines[j]) or _other_date_label(lines[j]):
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
        if opening:
            # A label known by its roots ("Einreichungsfrist", "Date limite de dépôt des
            # offres") before any label inside a sentence.
            for hit in labelled(lines, "deadline"):
                if _DEADLINE_EXCLUDE.search(hit.label):
                    continue
                if hit.value_line != hit.index and _other_date_label(hit.value):
                    continue  # the label's line below labels a date of its own
                found = _parse_deadline(_root_window(lines, hit.value_line, hit.value))
                if found is not None:
                    return found, _Ev(hit.index, "label known by its roots", 0.75, span=1)
    for i in range(len(lines)):
        wrapped = _cell_wrapped(lines, i)
        if wrapped is None or _DEADLINE_EXCLUDE.search(wrapped[0]):
            continue
        if any((m := p.search(wrapped[0])) and m.start() <= 14 for p in _DEADLINE_SPECIFIC):
            found = _parse_deadline(window(i, wrapped[1]))
            if found is not None:
                return found, _Ev(i, "label wrapped in its cell", 0.8, span=2)
    for i, line in enumerate(lines):
        m = _DEADLINE_GENERIC.search(line)
        if m and not _DEADLINE_EXCLUDE.search(line):
            found = _parse_deadline(window(i, m.end()))
            if found is not None:
                return found, _Ev(i, "the word deadline", 0.6, span=2)
    return None, None


def _other_date_label(line: str) -> bool:
    """A line that labels another date (an opening, questions, an award): a deadline's value
    does not run on into it."""
    return bool(_DEADLINE_STOP.search(line) or _DEADLINE_EXCLUDE.search(line))


def _root_window(lines: Sequence[str], value_line: int, value: str) -> str:
    """The text a label known by its roots gives its deadline: its value, which must hold the
    date, and the next line only for a time or a zone printed there.

    Such a label is only known by its words, so it is held to its own line: a sentence that
    happens to hold the roots ("Les offres reçues hors délai ...") gets no date from the lines
    below it, which label dates of their own.
    """
    if _find_date(value) is None:
        return ""
    nxt = next((ln for ln in lines[value_line + 1 : value_line + 3] if ln), "")
    if not nxt or _find_date(nxt) is not None or _other_date_label(nxt) or labelled([nxt], "value"):
        return value
    return f"{value}\n{nxt}"


def _estimated_value(
    lines: Sequence[str], lot_lines: set[int], text: str
) -> tuple[Decimal | None, str | None, _Ev | None]:
    doc_currency = _document_currency(text)
    passes = ((_TOTAL_VALUE_LABELS, False, None), (_VALUE_LABELS, True, True))
    for pattern, require_free, opening in (*passes, (_VALUE_LABELS, True, False)):
        if opening is False:
            found = _root_labelled_value(lines, lot_lines, doc_currency)
            if found is not None:
                return found
        for i, line in enumerate(lines):
            if i in lot_lines:
                continue
            m = pattern.search(line)
            if not m:
                continue
            # A value label opening its line beats one inside a line (a table's header row,
            # "... | Montant estimé HT |"), and a label known by its roots comes in between.
            if opening is not None and _opens(line, m.start()) != opening:
                continue
            if require_free and (_LOT_MENTION.search(line) or _TOTAL_VALUE_LABELS.search(line)):
                continue
            if _LOT_HEADER.match(line) or _NOT_VALUE.search(_label_part(line, m.end())):
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


_OPENING = re.compile(r"^" + _NUMBERING + r"[\W\d_]*$")


def _opens(line: str, start: int) -> bool:
    """Whether a label found at ``start`` opens its line: only numbering and marks before it."""
    return bool(_OPENING.match(line[:start]))


def _root_labelled_value(
    lines: Sequence[str], lot_lines: set[int], doc_currency: str | None
) -> tuple[Decimal, str | None, _Ev] | None:
    """The amount under a value label known by its roots ("Kostenschätzung", "Montant
    prévisionnel"), unless the label speaks of a lot."""
    for hit in labelled(lines, "value", lot_lines):
        if names_lot(hit.label) or _LOT_HEADER.match(lines[hit.index]):
            continue
        if _NOT_VALUE.search(hit.label) or _NOT_VALUE.search(_label_part(hit.value, 0)):
            # "Montant maximum", "Contract value: not less than £2m per claim": an amount of
            # another kind, not the estimate
            continue
        line = lines[hit.index]
        start = len(line) - len(hit.value) if hit.value_line == hit.index else len(line)
        got = _amount_after_label(lines, hit.index, max(start, 0), doc_currency)
        if got is not None and got[0] >= 100:
            return got[0], got[1], _Ev(hit.index, "value label known by its roots", 0.7, 1)
    return None


def extract_offline(text: str) -> TenderFields:
    """Extract tender fields from OCR text with rules only; unknown fields stay None/empty."""
    return extract_offline_explained(text).fields()


def extract_offline_explained(
    text: str | Sequence[str], layouts: Sequence[PageLayout | None] | None = None
) -> TenderExtraction:
    """The fields with their evidence; ``text`` is the document, or its pages in order, and
    ``layouts`` the pages' layouts where known (their headings give a title no label gives).

    A field whose confidence ends below ``MIN_CONFIDENCE`` is left empty (its candidate is kept
    in the evidence as ``rejected``): a missing value costs a look, a wrong one costs a bid.
    """
    pages = [text] if isinstance(text, str) else list(text)
    read: list[list[str]] = []
    page_of: list[int] = []
    for number, page in enumerate(pages, start=1):
        read.append(_normalise(page))
        page_of += [number] * len(read[-1])
        if len(page_of) >= MAX_LINES:
            break
    running = running_lines(read)
    lines = _restore_eszett([line for page_lines in strip_furniture(read) for line in page_lines])
    lines = restore_missing_at_lines(lines)
    warnings = _input_warnings(lines)
    if len(lines) > MAX_LINES:
        warnings.append(f"only the first {MAX_LINES} lines were read")
    lines, page_of = lines[:MAX_LINES], page_of[:MAX_LINES]
    joined = "\n".join(lines)
    # A long dossier states its fields up front (the notice, the data sheet): the rules read
    # the first pages, and the rest only for a field those lack, believing it less.
    front = _front(lines, page_of)
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
            source=line[:300] if line is not None else ev.source,
            line=ev.line + 1 if line is not None else None,
            page=page_of[ev.line] if line is not None else None,
            note=penalty,
        )
        if confidence < MIN_CONFIDENCE:
            evidence[name] = record.model_copy(update={"rejected": str(value)[:300]})
            return None
        evidence[name] = record
        return value

    form = read_form(lines) or read_eforms(lines) or read_cell_form(lines, layouts)
    owned = form.owned if form is not None else set()
    drafts, lot_lines = _lots(lines)
    if form is not None and "lots" in owned:
        drafts = [_LotDraft(lot.number, lot.title, lot.value, {lot.line}) for lot in form.lots]
    if "value" in owned and form is not None:
        value, currency, value_ev = form.value if form.value else (None, None, None)
    else:
        value, currency, value_ev = _estimated_value(front, lot_lines, "\n".join(front))
        if value is None and front is not lines:
            value, currency, value_ev = _estimated_value(lines, lot_lines, joined)
            value_ev = _further_in(value_ev)
    lots = [Lot(number=d.number, title=d.title or "", estimated_value=d.value) for d in drafts]
    if value is None and len(drafts) == 1 and drafts[0].value is not None:
        # A notice of one lot (eForms always has a lot) gives the contract's value there.
        value, currency = drafts[0].value, _document_currency(joined)
        value_ev = _Ev(min(drafts[0].lines), "the only lot's value", 0.6)
    lot_sum = sum((lot.estimated_value or 0 for lot in lots), Decimal(0))
    value_penalty = None
    if value is not None and lot_sum > value * Decimal("1.001"):
        value_penalty = "the lots' values add up to more than this total"
    elif (
        value is not None
        and value_ev is not None
        and form is None
        and _printed_as_other_amount(lines, value, _value_lines(lines, value_ev.line))
    ):
        value_penalty = "the same amount is printed as a turnover, guarantee or gross value"
    value = keep("estimated_value", value, value_ev, penalty=value_penalty)
    if form is not None and form.authority is not None:
        authority, authority_ev = form.authority
    elif "authority" in owned:
        authority, authority_ev = None, None
    else:
        authority, authority_ev = _authority(front)
    authority = keep(
        "issuing_authority", authority, authority_ev, penalty=_suspicious_name(authority)
    )
    if authority is None and "authority" not in owned:
        # No label names the buyer: a dossier's sentences may, when two kinds agree.
        said, said_ev = buyer_from_statements(lines)
        if said is not None and said.isupper():
            said = _mixed_case(lines, said)
        authority = keep("issuing_authority", said, said_ev, penalty=_suspicious_name(said))
    if form is not None and form.title is not None:
        title, title_ev = form.title
    elif "title" in owned:
        title, title_ev = None, None
    else:
        title, title_ev = _title(front, lot_lines, authority)
    if _same_name(title, authority) and title_ev is not None:
        # One text read as both the title and the buyer: one of the two readings is wrong,
        # and nothing says which.
        conflict = "the title and the authority were read as the same text"
        authority = keep("issuing_authority", authority, authority_ev, penalty=conflict)
        title_penalty: str | None = conflict
    elif form is not None and form.title is not None:
        title_penalty = None  # a form's title may open in lower case ("achat de ...")
    else:
        title_penalty = _suspicious_title(title)
    weak = title is None or title_penalty is not None or (title_ev and title_ev.confidence < 0.6)
    if weak and form is None and layouts:
        found = title_from_headings(
            layouts, _not_a_title, avoid=[authority or ""], text="\n".join(front)
        )
        if found is not None and not _same_name(found[0], authority):
            title, heading_ev = found
            located = _locate(lines, title, heading_ev.rule, heading_ev.confidence)
            title_ev = located if located is not None and located.line >= 0 else heading_ev
            title_penalty = None
    reference, reference_ev = _pick(
        form, "reference", lambda: _zoned(_located_reference, front, lines)
    )
    deadline, deadline_ev = _pick(form, "deadline", lambda: _zoned(_deadline, front, lines))
    weak = title is None or title_penalty is not None or (title_ev and title_ev.confidence < 0.7)
    if weak and form is None and reference:
        named = _title_in_running_header(running, reference)
        if named is not None:
            title, title_penalty = named, None
            title_ev = _Ev(-1, "running header beside the reference", 0.7, source=named)
    weak = title is None or title_penalty is not None or (title_ev and title_ev.confidence < 0.6)
    if weak and form is None:
        # "Tenders are invited ... for <what is bought>.": the invitation says what it is for.
        said_title, said_ev = _zoned(title_from_invitation, front, lines)
        if (
            said_title is not None
            # In lower case as a sentence prints it: only what else makes a value no title.
            and (_not_a_title(said_title) or _suspicious(said_title)) is None
            and not _same_name(said_title, authority)
        ):
            title, title_ev, title_penalty = said_title, said_ev, None
    if title is not None and title_ev is not None and _from_heading(title_ev, title_penalty):
        # "London Borough of Barnet - Waste Transfer Station": a heading that names its buyer
        # (a labelled title is kept as printed, buyer's name and all).
        parts = split_buyer_from_title(title, authority)
        if parts is not None and (authority is not None or _printed_again(lines, parts[1], title)):
            title = parts[0]
            if authority is None:
                buyer_ev = _Ev(title_ev.line, "buyer's name beside the title", 0.6, source=title)
                authority = keep("issuing_authority", parts[1], buyer_ev)
    cpv, cpv_ev = _pick(form, "cpv", lambda: _located_cpv(lines, joined))
    email, email_ev = _pick(
        form,
        "email",
        lambda: _zoned(lambda ls: _located_email(ls, "\n".join(ls), authority), front, lines),
    )
    lots_ev = None
    if drafts:
        rule = f"{form.form}: lots" if form is not None and "lots" in owned else "lot blocks"
        confidence = 0.95 if form is not None and "lots" in owned else 0.8
        lots_ev = _Ev(min(drafts[0].lines), rule, confidence)
    fields = TenderExtraction(
        title=keep("title", title, title_ev, penalty=title_penalty),
        issuing_authority=authority,
        reference=keep("reference", reference, reference_ev),
        submission_deadline=keep("submission_deadline", deadline, deadline_ev),
        estimated_value=value,
        currency=local_dollar(currency, joined) if value is not None else None,
        cpv_codes=keep("cpv_codes", cpv, cpv_ev) or [],
        lots=keep("lots", lots, lots_ev, penalty=_partial_lots(lots)) or [],
        contact_email=keep("contact_email", email, email_ev),
        warnings=warnings,
        extractor="offline",
    )
    if fields.currency is not None and "estimated_value" in evidence:
        evidence["currency"] = evidence["estimated_value"]
    if not any(getattr(fields, f) not in (None, []) for f in TenderFields.model_fields):
        fields.warnings.append("no tender fields found: is this a tender notice?")
    fields.evidence = evidence
    return fields


_T = TypeVar("_T")


def _pick(
    form: FormReading | None, name: str, rules: Callable[[], tuple[_T | None, _Ev | None]]
) -> tuple[_T | None, _Ev | None]:
    """A field from the document's form when it has one; the general rules otherwise, unless
    the form owns the field (its place is empty: the notice states no such value)."""
    if form is not None:
        found = getattr(form, name)
        if found is not None:
            value: _T = found[0]
            ev: _Ev = found[1]
            return value, ev
        if name in form.owned:
            return None, None
    return rules()


def _from_heading(ev: _Ev, penalty: str | None) -> bool:
    """Whether a title was read from a heading or a running header, not under a label."""
    return penalty is None and ("heading" in ev.rule or "running header" in ev.rule)


def _printed_again(lines: Sequence[str], name: str, beside: str) -> bool:
    """Whether a name is printed in the text apart from the line that holds ``beside``."""
    key, own = f" {_words_of(name)} ", _words_of(beside)
    return any(
        key in f" {flat} " and own not in flat
        for flat in (_words_of(line) for line in lines if line)
    )


def _title_in_running_header(running: Sequence[str], reference: str) -> str | None:
    """The name a running header prints beside the document's reference ("ID0119 - Centers of
    Excellence Discovery BPA", "Janitorial services | RFP 2027-15"): a document's header names
    it, and the reference beside the name says the header is about this procurement."""
    key = re.sub(r"\s", "", reference).lower()
    for line in running:
        flat = re.sub(r"\s", "", line).lower()
        if key not in flat:
            continue
        for part in re.split(r"\s+[-|:]\s+|\s*\|\s*", line):
            part = _clean_text_value(part) or ""
            if (
                re.sub(r"\s", "", part).lower().endswith(key)
                or key in re.sub(r"\s", "", part).lower()
            ):
                continue
            if len(part.split()) >= 2 and _plausible_title(part) and _not_a_title(part) is None:
                return part
    return None


#: Pages of a document read first; a longer document's later pages are read only for a field
#: these lack, and what they give is believed less (by ``FURTHER_IN``).
FRONT_PAGES = 8
FURTHER_IN = 0.75


def _front(lines: list[str], page_of: Sequence[int]) -> list[str]:
    """The lines of the first pages, the later ones blanked (so that line numbers stay); the
    lines themselves when the document is no longer than that."""
    if not page_of or page_of[-1] <= FRONT_PAGES:
        return lines
    return [line if page <= FRONT_PAGES else "" for line, page in zip(lines, page_of, strict=False)]


def _further_in(ev: _Ev | None) -> _Ev | None:
    if ev is None:
        return None
    return _Ev(ev.line, f"{ev.rule}, past the first pages", ev.confidence * FURTHER_IN, ev.span)


def _zoned(
    rule: Callable[[list[str]], tuple[_T | None, _Ev | None]], front: list[str], lines: list[str]
) -> tuple[_T | None, _Ev | None]:
    """A rule on the first pages, else on the whole document with its confidence lowered."""
    value, ev = rule(front)
    if value is not None or front is lines:
        return value, ev
    value, ev = rule(lines)
    return value, _further_in(ev)


def _located_reference(lines: Sequence[str]) -> tuple[str | None, _Ev | None]:
    reference = _reference(lines)
    return reference, _locate(lines, reference, "label", 0.85)


def _located_cpv(lines: Sequence[str], joined: str) -> tuple[list[str] | None, _Ev | None]:
    cpv = _cpv_codes(joined)
    return cpv, _locate(lines, cpv[0][:8] if cpv else None, "CPV", 0.9)


def _located_email(
    lines: Sequence[str], joined: str, authority: str | None
) -> tuple[str | None, _Ev | None]:
    email = _email(joined, authority)
    return email, _locate(lines, email, "e-mail", 0.8)


#: Lines read at most (a page of a notice has about 60): bounds the work on absurd input.
MAX_LINES = 20_000
#: A field kept with less confidence than this would be a guess: it is left empty.
MIN_CONFIDENCE = 0.5
_GARBAGE = "garbage"

_V = TypeVar("_V")

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


def _suspicious_title(value: str | None) -> str | None:
    if value and value[:1].islower():
        return "the title opens in lower case, as the rest of a line cut short does"
    return _not_a_title(value) or _suspicious(value)


def _not_a_title(value: str | None) -> str | None:
    """Why a value read as a title is something else: the kind of document, a heading of the
    document's structure, a line of its table of contents, a table's header row."""
    if not value:
        return None
    if _DOCUMENT_KIND.fullmatch(value):
        return "the value names the kind of document, not what is bought"
    if "|" in value or "\t" in value:
        return "the value holds several table cells"
    if _STRUCTURE_HEADING.fullmatch(value):
        return "the value is a heading of the document's structure"
    if _TOC_ENTRY.search(value):
        return "the value ends with a page number, as a table of contents line does"
    words = re.findall(r"[^\W\d_]+", value.lower())
    if len(words) >= 2 and all(w in _COLUMN_WORDS for w in words):
        return "the value is a table's header row"
    if not any(len(w) >= 4 for w in words):
        return "the value has no word to name a procurement"
    return None


# A heading of a dossier's own structure: "Section 2 - Specification", "Part B", "Annex 3",
# "Instructions to tenderers", "Table of contents".
_STRUCTURE_HEADING = re.compile(
    r"\W*(?:(?:section|part|chapter|annex|annexe|appendix|schedule|volume|article|clause|module|"
    r"lot|abschnitt|teil|anlage|kapitel|titre|chapitre|partie)\s+[\dIVXA-H]{1,4}\b.{0,60}"
    r"|(?:table\s+of\s+)?contents|sommaire|inhalt(?:sverzeichnis)?|introduction|preamble|"
    r"background|overview|definitions?|disclaimer|instructions?\s+to\s+(?:tenderers|bidders|"
    r"offerors|applicants)|(?:general|special|particular)\s+conditions(?:\s+of\s+contract)?|"
    r"terms\s+and\s+conditions|scope\s+of\s+(?:work|works|services)|specifications?|"
    r"evaluation\s+criteria|form\s+of\s+tender|price\s+schedule|bill\s+of\s+quantities)\W*",
    re.I,
)
# "Scope of works ....... 12", "3.2 Evaluation 14": a contents line ends with its page.
_TOC_ENTRY = re.compile(r"(?:\.{3,}|…)\s*\d{1,3}\s*$|^\d+(?:\.\d+)*\s.*\D\s\d{1,3}$")
# The words of a table's header row.
_COLUMN_WORDS = frozenset(
    re.findall(
        r"\S+",
        "no nr sl sr s item items description qty quantity quantities unit units rate rates "
        "price prices amount amounts total value values date dates name names title remarks ref "
        "reference lot lots code codes particulars details specification uom cost costs serial "
        "number designation montant prix quantite quantité unité libellé menge einheit preis "
        "betrag bezeichnung position pos",
    )
)


# What a document calls itself ("Request for Quotation (RFQ)", "Tender document", "Avis
# d'appel public à la concurrence"): the kind of document, never its title.
_DOCUMENT_KIND = re.compile(
    r"\W*(?:(?:the\s+)?(?:request\s+for\s+(?:quotations?|proposals?|tenders?|bids?|offers?|"
    r"information|qualifications?|expressions?\s+of\s+interest)"
    r"|invitation\s+(?:to|for)\s+(?:tenders?|bids?|quotations?|offers?)"
    r"|(?:notice\s+inviting|call\s+for)\s+(?:tenders?|bids?|proposals?)"
    r"|(?:e-?)?(?:tender|bid|bidding|solicitation|contract|procurement|rfp|rfq|itt)\s+"
    r"(?:notice|documents?|dossier|specifications?|packs?|forms?)"
    r"|(?:contract|tender|prior\s+information)\s+notice|solicitation|tender|quotation"
    r"|appel\s+d'offres(?:\s+ouvert)?|avis\s+d'appel\s+public\s+[àa]\s+la\s+concurrence"
    r"|dossier\s+de\s+consultation(?:\s+des\s+entreprises)?|r[èe]glement\s+de\s+(?:la\s+)?"
    r"consultation|avis\s+de\s+march[ée]"
    r"|ausschreibung|auftragsbekanntmachung|bekanntmachung|vergabeunterlagen"
    r"|leistungsbeschreibung|aufforderung\s+zur\s+angebotsabgabe)"
    r"(?:\s*\((?:RFQ|RFP|RFT|ITT|RFI|IFB|NIT|DCE|RC)\))?|RFQ|RFP|RFT|ITT|RFI|IFB|NIT|DCE)\W*",
    re.I,
)


def _same_name(title: str | None, authority: str | None) -> bool:
    """Whether the title and the authority are one text, or the authority holds the whole
    title (a title may name its buyer: "Cleaning for Northshire County Council")."""
    if not title or not authority:
        return False
    key, name = _words_of(title), _words_of(authority)
    return bool(key) and f" {key} " in f" {name} "


def _words_of(value: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", value.lower()))


def _value_lines(lines: Sequence[str], label_line: int) -> range:
    """The lines an amount was read from: its label's, or the next ones when that has none."""
    if 0 <= label_line < len(lines) and _amounts(lines[label_line]):
        return range(label_line, label_line + 1)
    return range(label_line, label_line + 3)


def _printed_as_other_amount(lines: Sequence[str], value: Decimal, own: range) -> bool:
    """Whether ``value`` is printed, outside the lines it was read from, under words that make
    an amount no estimate (a turnover, a guarantee, a value including VAT): two labels then
    claim one amount, and the one the rules chose may be the wrong one."""
    for n, line in enumerate(lines):
        digit = re.search(r"\d", line) if n not in own else None
        if digit is None or not _NOT_VALUE.search(line[: digit.start()]):
            continue
        if any(a.value == value for a in _amounts(line)):
            return True
    return False


def _partial_lots(lots: Sequence[Lot]) -> str | None:
    """Lots of which some have a value and others none: a value was printed where the rules
    did not find it, so the list is incomplete."""
    valued = [lot.estimated_value is not None for lot in lots]
    if any(valued) and not all(valued):
        return "some lots have a value and others none: a value was missed"
    return None


# Words a body's name may open with in lower case ("la Commune de ...", "de Gemeente ...").
_LOWER_NAME_START = re.compile(r"^(?:la|le|les|l'|de|du|des|der|die|das|het|the)\b")


def _suspicious_name(value: str | None) -> str | None:
    """An authority's name is printed with a capital: one that opens with another lower-case
    word is OCR noise before the name ("ius Metqavieesd City of Riverton")."""
    if value and value[:1].islower() and not _LOWER_NAME_START.match(value):
        return "the name opens with a lower-case word, as OCR noise does"
    if value and reads_as_sentence(value):
        return "the value reads as a sentence, not a name"
    return _suspicious(value)


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
    read = sum(unicodedata.name(c, "").startswith(_READ_SCRIPTS) for c in letters[:20_000])
    if read < 0.6 * min(len(letters), 20_000):
        return ["the text is mostly in a script the rules do not read (not Latin or Cyrillic)"]
    # Words of the scripts read only: a bilingual form's other script is not OCR noise.
    words = _READ_WORDS.findall(text[:200_000])
    wordlike = sum(bool(_WORDLIKE.fullmatch(w)) for w in words)
    if len(words) >= 20 and wordlike < 0.5 * len(words):
        return [f"the text looks like OCR {_GARBAGE}: few word-like tokens"]
    return []


#: Scripts the label tables hold words of (see ``labels`` and ``label_roots``).
_READ_SCRIPTS = ("LATIN", "CYRILLIC")
_READ_WORDS = re.compile(r"(?<![^\W\d_])[A-Za-zÀ-ÖØ-öø-ɏЀ-ԯ]+(?![^\W\d_])")
_WORDLIKE = re.compile(
    r"(?i:[a-zß-ÿ]*[aeiouyàâäéèêëîïôöûüÿ][a-zß-ÿ]*)|[A-Z]{2,6}"
    # A Cyrillic word has a vowel of its own alphabet (Russian, Ukrainian, Kazakh, Bulgarian).
    r"|(?i:[Ѐ-ԯ]*[аеёиоуыэюяіїєұүөәі][Ѐ-ԯ]*)|[А-ЯЁІЇЄ]{2,6}"
)
