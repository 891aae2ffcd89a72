"""Finding a labelled value in a list of lines: same line, next line, wrapped continuations."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pg_pipeline_documents.extract_offline.concepts import _label_word, label_field
from pg_pipeline_documents.extract_offline.labels import (
    _CONNECTOR_END,
    _HEADING_LIKE,
    _LABEL_LIKE,
    _LOT_HEADER,
)
from pg_pipeline_documents.extract_offline.normalise import _TRAILING_JUNK


def _looks_like_label(line: str) -> bool:
    return bool(_LABEL_LIKE.match(line) or _HEADING_LIKE.match(line))


@dataclass(frozen=True)
class _Hit:
    index: int  # line where the label was found
    value: str  # text after the label, possibly joined with wrapped continuation lines
    end: int  # last line that contributed to value


def _continue_value(
    lines: Sequence[str], index: int, value: str, *, wrap_width: int = 60, max_extra: int = 3
) -> _Hit:
    """Join continuation lines of a value that OCR broke across lines."""
    end = index
    for _ in range(max_extra):
        nxt = lines[end + 1] if end + 1 < len(lines) else ""
        if not nxt or _looks_like_label(nxt) or _LOT_HEADER.match(nxt):
            break
        # A capitalised next line is usually a new heading or sentence: only a line that
        # evidently continues (lower case, digits, or after "of"/"and"/...) is joined, and a
        # digit-led one only after a long line, as in "...districts" / "2027-2029".
        wrapped = (
            nxt[0].islower()
            or bool(_CONNECTOR_END.search(value))
            or (nxt[0].isdigit() and len(lines[end]) >= wrap_width and len(nxt) < 40)
        )
        if not wrapped:
            break
        if re.search(r"\s[.,:;'`\"_~*°•+=|-]+$", value):
            value = _TRAILING_JUNK.sub("", value)  # a speck at the line end, not hyphenation
        value = f"{value} {nxt}" if not value.endswith("-") else value + nxt
        end += 1
    return _Hit(index, value.strip(), end)


def _find_labelled(
    lines: Sequence[str],
    patterns: Iterable[re.Pattern[str]],
    *,
    skip: set[int] | None = None,
    accept: re.Pattern[str] | None = None,
    wrap: bool = True,
    next_line: bool = True,
    name: bool = False,
) -> _Hit | None:
    """First value for the highest-priority label: same line, else the next non-label line.

    A bracketed note after the label is the label's ("Contracting authority (name) - X"). With
    ``name``, a value that follows its label without a separator must start in capitals: "Contract
    title and scope Catering ..." has a label longer than the pattern, not the title "and scope".
    """
    skip = skip or set()
    for pattern in patterns:
        for i, line in enumerate(lines):
            if i in skip:
                continue
            m = pattern.match(line)
            if not m:
                continue
            value = m.group("value").strip()
            note = _LABEL_NOTE.match(value)
            if note:
                value = note.group("rest").strip()
            if (value.endswith(":") and len(value) <= 40) or _translated_label(value):
                # "ÖFFENTLICHER AUFTRAGGEBER / NAME:", "Title - Sujet": the label goes on (in
                # the form's other language), its value below
                value = ""
            elif (
                name and value[:1].islower() and not _SEPARATOR_END.search(line[: m.start("value")])
            ):
                continue
            start = i
            if not value and next_line:
                j = i + 1
                while j < len(lines) and j <= i + 2 and not lines[j]:
                    j += 1
                if j >= len(lines) or j in skip or _looks_like_label(lines[j]):
                    continue
                value, start = lines[j], j
            if not value or (accept is not None and not accept.search(value)):
                continue
            if wrap:
                hit = _continue_value(lines, start, value)
                return _Hit(i, hit.value, hit.end)
            return _Hit(i, value, start)
    return None


def _translated_label(value: str) -> bool:
    """A short value without digits that is itself a label: a bilingual form's label in its
    second language ("Title - Sujet", "Solicitation No. - N° de l'invitation")."""
    words = value.rstrip(" :").split()
    if re.search(r"\d", value) or not words or len(words) > MAX_TRANSLATION_WORDS:
        return False
    # Label words only: "Region Mälardalen Health Authority" holds a root, but is a name.
    return all(_label_word(w)[0] for w in words) and label_field(" ".join(words)) is not None


#: Words of a label's translation at most.
MAX_TRANSLATION_WORDS = 5


# "(name) - X", "(nom) : X": a note on the label, then its separator and the value.
_LABEL_NOTE = re.compile(r"^\((?P<note>[^\d()]{1,30})\)\s*(?:[:|]|-(?=\s))\s*(?P<rest>.*)$")
_SEPARATOR_END = re.compile(r"[:|=.-]\s*$")


def _cell_wrapped(lines: Sequence[str], i: int) -> tuple[str, int] | None:
    """A label whose table cell wrapped: "Date limite de réception des 19/10/2026" + "offres".

    Returns the label as printed (the line up to its value, then the wrapped words) and where
    the value starts on line ``i``; None when the next line is not a word or two of a label.
    """
    line = lines[i]
    digit = re.search(r"\d", line)
    if digit is None or digit.start() < 8 or re.search(r"[:|]\s*$", line[: digit.start()]):
        return None
    nxt = next((ln for ln in lines[i + 1 : i + 3] if ln), "")
    if not re.fullmatch(r"[^\W\d_]+(?: [^\W\d_]+)?", nxt) or len(nxt) > 25:
        return None
    return f"{line[: digit.start()].rstrip()} {nxt}", digit.start()
