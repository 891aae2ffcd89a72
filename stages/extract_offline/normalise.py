"""Text normalisation: Unicode forms, dashes and quotes, OCR's O-for-0, junk at value edges."""

from __future__ import annotations

import re
import unicodedata

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-")


_QUOTES = {ord("\u2018"): "'", ord("\u2019"): "'", ord("\u201c"): '"', ord("\u201d"): '"'}

# TED section numbers as OCR reads them: "Il.1.1)", "I|.2.1)" for II.1.1), II.2.1).
_ROMAN_MISREAD = re.compile(r"^(?=[IVXl|]*[l|])(?=[IVXl|]*[IVX])[IVXl|]{2,4}(?=\.\d)")


# A dot leader, with what OCR makes of its tail ("......::.-ce:::ccceees"): a value never
# starts with four dots glued to it, so the whole token is the leader.
_LEADER = re.compile(r"(?<=[^\W\d_)])\s*[._]{4,}\S*\s*(?=\S)")

#: Bounds on the work: the rules read at most this much text, and this much of any one line
#: (a notice's lines are under 200 characters; a megabyte of digits on one line is not a notice,
#: and every regular expression below then runs on a short string).
MAX_TEXT_CHARS = 4_000_000
MAX_LINE_CHARS = 2_000


def _normalise(text: str) -> list[str]:
    """NFKC (ligatures, no-break spaces), unified dashes and quotes, collapsed blanks per line.

    Lines longer than ``MAX_LINE_CHARS`` are cut there, and text beyond ``MAX_TEXT_CHARS``
    is not read.
    """
    text = "\n".join(line[:MAX_LINE_CHARS] for line in text[:MAX_TEXT_CHARS].split("\n"))
    text = unicodedata.normalize("NFKC", text)
    text = text.translate(_DASHES).translate(_QUOTES)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")
    lines = []
    for raw in text.split("\n"):
        line = re.sub(r"[ \t\u00a0\u2007\u202f\u200b]+", " ", raw).strip()
        # A dot (or underscore) leader between a label and its value is a separator.
        line = _LEADER.sub(": ", line)
        # Table borders and specks read as punctuation at the edges carry no information.
        line = line.strip("|[]").strip()
        line = re.sub(r"^[.,:;'`\"_~*°•+=|-]+(?:\s+|$)", "", line)
        line = _ROMAN_MISREAD.sub(lambda m: m.group().replace("l", "I").replace("|", "I"), line)
        lines.append(line)
    return lines


_O_IN_NUMBER = re.compile(
    r"(?<=\d)O|(?<=\d[.,:/-])O|(?<![A-Za-z])O(?=[\dO]*(?:[.,]O*)?\d)|(?<=\d)o(?=\d)"
)


def _fix_digit_o(s: str) -> str:
    """Read ``O``/``o`` as zero where it sits inside a number (``2O27``, ``1,25O,OOO.OO``)."""
    for _ in range(12):
        new = _O_IN_NUMBER.sub("0", s)
        if new == s:
            break
        s = new
    return s


_LEADING_JUNK = re.compile(r"^[\s.,;:|_*°•~^`'\"+=©®-]+")


_TRAILING_JUNK = re.compile(r"[\s.,;:|_*°•~^`'\"+=©®-]+$")


def _fix_numeric_tokens(value: str) -> str:
    """``2O27-2O29`` in running text: O for 0 only in tokens that are otherwise numeric."""

    def fix(m: re.Match[str]) -> str:
        tok = m.group()
        return tok.replace("O", "0") if sum(c.isdigit() for c in tok) >= 2 else tok

    return re.sub(r"(?<!\w)[\dO][\dO.,:/-]*[\dO](?!\w)", fix, value)


def _clean_text_value(value: str) -> str | None:
    """Collapse blanks and drop the stray punctuation OCR leaves at the edges of a value."""
    value = _fix_numeric_tokens(re.sub(r"\s+", " ", value))
    if value.count("'") == 1:  # a lone quote speck before a word: "city 'centre"
        value = re.sub(r"(?<=\s)'(?=\w)", "", value)
    value = _LEADING_JUNK.sub("", value)
    tail = _TRAILING_JUNK.search(value)
    if tail is not None:
        value = value[: tail.start()]
        # A quote that closes one opened in the value is the name's own: 'LLP "Name"'.
        closing = next((q for q in "\"'" if q in tail.group() and value.count(q) % 2), "")
        value += closing
    return value or None


def _words(value: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", value.lower()))


_GERMAN_WORDS = re.compile(r"\b(?:der|die|das|und|für|fiir|fur|Uhr|Angebote|Vergabe\w*)\b")
_ESZETT_AS_B = re.compile(r"(?<=[a-zäöü])B(?=[a-zäöü]|\b)")


def _restore_eszett(lines: list[str]) -> list[str]:
    """OCR without German language data reads ``ß`` as ``B`` ("HauptstraBe"): in a German
    notice, a capital B between lower-case letters (or ending a lower-case word) is ``ß``."""
    text = " ".join(lines[:400])
    if len(_GERMAN_WORDS.findall(text)) < 5:
        return lines
    return [_ESZETT_AS_B.sub("ß", line) if "B" in line else line for line in lines]
