"""Names: the notice's title and the issuing authority.

Both are read after their label first. A label printed without a separator (a two-cell table row,
"Titel Neubau einer Grundschule") counts only for one-word labels followed by a capitalised value
that looks like a name. Without a label, the title is the first plausible line under the notice's
heading ("Contract notice", "Bekanntmachung"), and the authority a letterhead line naming a public
body; running headers and footers were blanked before (see ``furniture``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pg_pipeline_documents.extract_offline.concepts import (
    _is_label_line,
    _label_word,
    fold,
    label_is_ambiguous,
    labelled,
)
from pg_pipeline_documents.extract_offline.dates import _find_date
from pg_pipeline_documents.extract_offline.evidence import _Ev, _Result
from pg_pipeline_documents.extract_offline.headings import says_what_is_bought
from pg_pipeline_documents.extract_offline.label_roots import QUALIFIERS
from pg_pipeline_documents.extract_offline.labels import (
    _ADDRESS_LINE,
    _AUTHORITY_LABELS,
    _AUTHORITY_WORDS,
    _CONNECTOR_END,
    _DEADLINE_SPECIFIC,
    _HEADING_LIKE,
    _INLINE_LOT_NO,
    _NOT_REFERENCE,
    _NOTICE_HEADING,
    _REF_LABELS,
    _TITLE_LABELS,
    _VALUE_LABELS,
    vocabulary,
)
from pg_pipeline_documents.extract_offline.lines import (
    _continue_value,
    _find_labelled,
    _looks_like_label,
)
from pg_pipeline_documents.extract_offline.normalise import _clean_text_value, _words


def _one_word(field: str) -> list[str]:
    return [f for f in vocabulary(field) if not re.search(r"\\s|\s", f)]


def _loose(fragments: list[str]) -> re.Pattern[str]:
    """A one-word label, a space, then a capitalised value: "Objet Travaux de ...".

    The label must be capitalised itself (a table cell), not a word inside a sentence.
    """
    words = "|".join(fragments)
    return re.compile(r"^(?=[A-ZÀ-Þ])(?i:" + words + r")\s+(?P<value>[A-ZÀ-Þ][^:]*)$")


_LOOSE_TITLE = _loose(_one_word("title"))
_LOOSE_AUTHORITY = _loose(_one_word("authority"))


def _unseparated(
    lines: Sequence[str],
    pattern: re.Pattern[str],
    *,
    skip: set[int] | None = None,
    need: re.Pattern[str] | None = None,
) -> tuple[str, int] | None:
    for i, line in enumerate(lines):
        m = pattern.match(line)
        if not m or (skip and i in skip):
            continue
        value = _clean_text_value(m.group("value"))
        if not value or len(value.split()) < 2 or not _plausible_title(value):
            continue
        if need is not None and not need.search(value):
            continue
        hit = _continue_value(lines, i, value)  # a cell that wrapped onto the next line
        return _clean_text_value(hit.value) or value, i
    return None


_ANY_LABEL = [*_TITLE_LABELS, *_AUTHORITY_LABELS, *_REF_LABELS]
_OTHER_LABELS = re.compile(
    "|".join(
        f"(?:{f})"
        for f in vocabulary("not_deadline") + vocabulary("not_value") + vocabulary("deadline")
    ),
    re.I,
)


def _any_label(line: str) -> bool:
    """A line that opens with a label of some field, or with words naming a date or amount.

    Only the line's first words count: "Provision of insurance services" is a title, while
    "Insurance cover required: ..." or "Minimum annual turnover" label something else.
    """
    if any(p.match(line) for p in _ANY_LABEL):
        return True
    searches = [_NOT_REFERENCE, _OTHER_LABELS, _VALUE_LABELS, *_DEADLINE_SPECIFIC]
    return any((m := p.search(line)) is not None and m.start() <= _LABEL_START for p in searches)


#: How far into a line a label may start (after numbering and a word or two: "Minimum annual").
_LABEL_START = 20


# A token that is an identifier, not a word: "2026/S", "LOT-0001", a UUID, "T-6840-26".
_ID_TOKEN = re.compile(r"^(?=.*\d)(?:.*[A-Za-z].*|.*/.*|.*\d{6,}.*|.*\d-\d+-.*)$")


_PORTAL = re.compile(
    r"\b(?:tenders?|portal|platform|journal|e-?tendering|supplement|vergabeplattform|"
    r"vergabeportal|amtsblatt|plateforme|bulletin|profil\s+d'acheteur)\b",
    re.I,
)


def _awaits_value(line: str) -> bool:
    """A label alone on its line, whose value is the line below."""
    if re.search(r"[:|]\s*$", line) or _HEADING_LIKE.match(line):
        return True
    return any((m := p.match(line)) and not m.group("value").strip() for p in _ANY_LABEL)


def _plausible_title(line: str) -> bool:
    """A line that can be a name: words, not an identifier, a date, an address or a label."""
    if len(line) > 200 or "@" in line or "http" in line.lower() or line.rstrip().endswith(":"):
        return False
    if _ADDRESS_LINE.search(line):
        return False
    if _looks_like_label(line) or _any_label(line):
        return False
    tokens = line.split()
    if any(_ID_TOKEN.match(t.strip("().,;")) for t in tokens):
        return False
    chars = [c for c in line if not c.isspace()]
    digits = sum(c.isdigit() for c in chars)
    letters = sum(c.isalpha() for c in chars)
    return digits <= 0.2 * len(chars) and letters >= 0.6 * len(chars)


def _label_over_date(line: str, below: str) -> bool:
    """A short line above a line that opens with a date: the label of that date."""
    if len(line.split()) > 6 or not below:
        return False
    found = _find_date(below)
    if found is None or found.start > 25 or len(below) > 90:
        return False
    # "Dispatch date 31.12.2026": the line below labels its date itself.
    return not _OWN_DATE_LABEL.search(below[: found.start])


_OWN_DATE_LABEL = re.compile(r"[^\W\d]\s*:|\b(?:date|datum|termin)\b|\w+(?:datum|termin)\b", re.I)


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


def _by_label_roots(lines: Sequence[str], field: str, skip: set[int]) -> tuple[str, _Ev] | None:
    """A name under a label known by its roots ("Leistungsbezeichnung", "Organisme acheteur").

    The value must look like a name; a value on the line below its label may wrap onto the
    next line, one on the label's own line may not (a cell to its right could follow).
    """
    for hit in labelled(lines, field, skip):
        value = _clean_text_value(_INLINE_LOT_NO.sub("", hit.value))
        if not value or len(value.split()) < 2 or not _plausible_title(value):
            continue
        if not hit.separated and not value[0].isupper():
            continue  # "The contracting authority reserves the right ...": a sentence
        if reads_as_sentence(value):
            continue  # "The tenderer will be fully responsible for ...": not a name
        # "Identification de l'organisme qui Département ..." over "passe le marché": a label
        # cell that wrapped; the lower-case line below is the rest of the label, not the name.
        cut = not hit.separated and hit.value_line == hit.index and _ends_cut(hit.label)
        # A value wraps onto the next line only where it evidently goes on (see
        # _continue_value), as a value column of a two-column layout does; an authority's
        # name only onto a line in lower case (the next line is often its street).
        nxt = next((ln for ln in lines[hit.value_line + 1 : hit.value_line + 2] if ln), "")
        if not cut and not _ADDRESS_LINE.search(nxt) and (field == "title" or nxt[:1].islower()):
            joined = _continue_value(lines, hit.value_line, value).value
            value = _clean_text_value(joined) or value
        below = hit.value_line != hit.index
        rule = "label known by its roots" + (" (value below)" if below else "")
        if label_is_ambiguous(hit.label):
            # Words of two fields in one label: which one it names is a guess.
            rule += ", words of two fields"
            return value, _Ev(hit.index, rule, 0.4, span=hit.value_line - hit.index)
        return value, _Ev(hit.index, rule, 0.7, span=hit.value_line - hit.index)
    return None


def reads_as_sentence(value: str) -> bool:
    """Whether a value is a clause of running text, not a name: it holds a finite verb that
    no buyer's name or procurement's title holds ("will be", "shall", "is requested", "doit",
    "wird")."""
    return bool(_FINITE_VERB.search(value))


# Auxiliaries and modals of English, French and German: names of bodies and of purchases
# state what they are, they do not say what someone is, will, or must do.
_FINITE_VERB = re.compile(
    r"\b(?:will|shall|must|should|would|may\s+be|can\s+be|is|are|was|were|has\s+been|have\s+been"
    r"|sera|seront|doit|doivent|peut|peuvent|wird|werden|muss|m[üu]ssen|kann|k[öo]nnen|ist|sind)"
    r"\b",
    re.I,
)


def _ends_cut(label: str) -> bool:
    """Whether a label read without a separator ends with a word that is neither a root nor a
    qualifier: a label does not end so, unless it was cut where its cell wrapped."""
    last = label.split()[-1] if label.split() else ""
    if last.endswith(")"):
        return False  # a note in brackets: "Vergabenummer (intern)"
    _belongs, is_root = _label_word(last)
    return not is_root and fold(last.strip(".,;:")) not in QUALIFIERS


def _title(lines: Sequence[str], lot_lines: set[int], authority: str | None) -> _Result[str]:
    not_lot = re.compile(r"^(?!lot\b)", re.I)
    hit = _find_labelled(lines, _TITLE_LABELS, skip=lot_lines, accept=not_lot, name=True)
    if hit is not None:
        value = _clean_text_value(_INLINE_LOT_NO.sub("", hit.value))
        if not value:
            return None, None
        return _complete_from_heading(lines, value), _Ev(hit.index, "label", 0.9)
    loose = _unseparated(lines, _LOOSE_TITLE, skip=lot_lines)
    if loose is not None:
        return loose[0], _Ev(loose[1], "label without a separator", 0.6)
    by_root = _by_label_roots(lines, "title", lot_lines)
    if by_root is not None:
        return by_root
    # "INVITATION TO TENDER for the supply of ..." or the heading followed by the title line.
    for i, line in enumerate(lines[:15]):
        m = _NOTICE_HEADING.match(line)
        if not m:
            continue
        rest = re.sub(r"^\s*[:\-]?\s*", "", m.group("rest"))
        if re.match(r"(?:for|:)\s", rest, re.I):
            value = _clean_text_value(re.sub(r"^(?:for|:)\s+(?:the\s+)?", "", rest, flags=re.I))
            return value, _Ev(i, "notice heading", 0.7)
        filled = [j for j in range(i + 1, min(i + 12, len(lines))) if lines[j]][:5]
        for k, j in enumerate(filled):
            cand = lines[j]
            if _HEADING_LIKE.match(cand):
                break  # the notice's sections begin: the title would have come before them
            if k and _awaits_value(lines[filled[k - 1]]):
                continue  # the value of the label above it: "Name and addresses" / "Westshire"
            if _label_over_date(cand, lines[filled[k + 1]] if k + 1 < len(filled) else ""):
                continue  # "Date of this notice" above "11:00 hours on the 13th day of ..."
            # Skip "Open procedure - Works", "Services", identifiers, dates, a labelled line
            # ("Name of buying body - X") and the authority.
            if (
                len(cand.split()) < 3
                or re.search(r"\bprocedure\b", cand, re.I)
                or (authority and f" {_words(authority)} " in f" {_words(cand)} ")
                or not _plausible_title(cand)
                or _is_label_line(cand)
            ):
                continue
            if _NOTICE_HEADING.match(cand) or j in lot_lines:
                break
            if re.match(r"^(?:for\s+)(?:the\s+)?", cand, re.I):
                cand = re.sub(r"^for\s+(?:the\s+)?", "", cand, flags=re.I)
            hit2 = _continue_value(lines, j, cand)
            value = _clean_text_value(hit2.value)
            if value and _printed_elsewhere(lines, range(j, hit2.end + 1), value):
                return value, _Ev(j, "line under the notice heading, printed again", 0.7)
            # The line right under the heading is where notices print their title; a line
            # further down, after others were skipped, may be any unlabelled line, and is
            # believed only when the notice prints it again (under a label it has).
            if k == 0 and value and says_what_is_bought(value):
                # Right under the heading, in words that name a purchase ("Refurbishment of
                # ...", "Supply of ..."): what notices print there.
                return value, _Ev(j, "line under the notice heading, naming a purchase", 0.6)
            return value, _Ev(j, "line under the notice heading", 0.45 if k == 0 else 0.4)
        break
    return None, None


def _printed_elsewhere(lines: Sequence[str], own: range, value: str) -> bool:
    """Whether the words of ``value`` are printed again outside the lines ``own``, in one
    run (across line breaks: a labelled copy may wrap)."""
    key = _words(value)
    if len(key.split()) < 3:
        return False
    rest = " ".join(_words(line) for n, line in enumerate(lines) if line and n not in own)
    return f" {key} " in f" {rest} "


def _mixed_case(lines: Sequence[str], value: str) -> str:
    """A name printed in capitals in a heading, as the running text spells it, if it does."""
    pattern = re.compile(r"\b" + r"\s+".join(map(re.escape, value.split())) + r"\b", re.I)
    for line in lines:
        for m in pattern.finditer(line):
            if not m.group().isupper():
                return m.group()
    return value


def _authority(lines: Sequence[str]) -> _Result[str]:
    hit = _find_labelled(lines, _AUTHORITY_LABELS, wrap=False, name=True)
    value: str | None = None
    ev: _Ev | None = None
    if hit is not None:
        value = hit.value
        # "Name and addresses Official name: X": the more specific label inside the value.
        inner = next((m for p in _AUTHORITY_LABELS if (m := p.match(value))), None)
        if inner is not None and inner.group("value").strip():
            value = inner.group("value").strip()
        ev = _Ev(hit.index, "label", 0.9)
        # Wrapped only when the break is evidently mid-name.
        end = hit.end
        while end + 1 < len(lines) and lines[end + 1] and not _looks_like_label(lines[end + 1]):
            if not (lines[end + 1][0].islower() or _CONNECTOR_END.search(value.rstrip(","))):
                break
            value = f"{value} {lines[end + 1]}"
            end += 1
    elif (loose := _unseparated(lines, _LOOSE_AUTHORITY)) is not None:
        value, ev = loose[0], _Ev(loose[1], "label without a separator", 0.6)
    elif (by_root := _by_label_roots(lines, "authority", set())) is not None:
        value, ev = by_root
    else:
        # No label: a header line naming a public body, above the notice heading.
        for n, line in [(n, ln) for n, ln in enumerate(lines) if ln][:6]:
            if _NOTICE_HEADING.match(line) or _looks_like_label(line) or _any_label(line):
                break
            if _PORTAL.search(line):
                continue  # a portal or journal names itself at the top of its pages
            if line.endswith(".") and len(line.split()) >= 5:
                continue  # a sentence ("The contracting authority reserves ..."), not a name
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
        # A number, an e-mail, or the next label ('... "Name", postal address: ...').
        if re.search(r"\d", part) or "@" in part or _looks_like_label(part):
            break
        kept.append(part)
    return _clean_text_value(", ".join(kept)), ev


# What joins a buyer's name and a title in one heading: "London Borough of Barnet - Waste
# Transfer Station", "Highways Maintenance | Northshire County Council".
_NAME_TITLE_JOIN = re.compile(r"\s+[-\u2013\u2014|]\s+|\s*\|\s*")


def split_buyer_from_title(title: str, authority: str | None) -> tuple[str, str] | None:
    """A title printed as "Buyer - Title" (or "Title - Buyer"), split: (title, buyer).

    The part taken for the buyer must be the authority read elsewhere, or name a public body in
    words no title uses for what it buys while the other part does name a purchase; a title
    with a dash of its own ("Roads - Lot 2") is left whole. The caller takes the buyer's part
    for the authority only where none was read.
    """
    joins = list(_NAME_TITLE_JOIN.finditer(title))
    if not joins:
        return None
    first, last = joins[0], joins[-1]
    for buyer, rest in (
        (title[: first.start()], title[first.end() :]),
        (title[last.end() :], title[: last.start()]),
    ):
        buyer, rest = buyer.strip(), _clean_text_value(rest) or ""
        if len(rest.split()) < 2:
            continue
        if authority is not None and _same_body(buyer, authority):
            return rest, buyer
        if (
            _AUTHORITY_WORDS.search(buyer)
            and not says_what_is_bought(buyer)
            and says_what_is_bought(rest)
            and len(buyer.split()) <= 8
            and not re.search(r"\d", buyer)
        ):
            # A body's name that is not the authority read elsewhere (a department, a short
            # form of it): the title is the rest all the same.
            return rest, buyer
    return None


def _same_body(a: str, b: str) -> bool:
    """Whether two names are one body's: equal words, or one holds the other whole (a name
    with its acronym, "London Borough of Barnet (LBB)")."""
    ka, kb = f" {_words(a)} ", f" {_words(b)} "
    short = min(ka, kb, key=len)
    return len(short.split()) >= 2 and (ka in kb or kb in ka)
