"""Rule-based extraction of tender fields from OCR'd notice text.

Deterministic and dependency-free: regular expressions plus label heuristics tuned for English
public-procurement notices (EU/TED style "II.1.1) Title:" forms as well as free-form invitations to
tender). It tolerates typical OCR noise: doubled spaces, values wrapped onto the next line, ``O``
read for ``0`` inside references and numbers, spaces around separators and ligatures.

The rule throughout is *unknown over wrong*: a field is only filled when a label (or an
unambiguous pattern such as a CPV code) says what the value is.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from decimal import Decimal, InvalidOperation
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from stages.tender import Lot, TenderFields

__all__ = ["extract_offline"]


# --------------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------------

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-")
_QUOTES = {ord("\u2018"): "'", ord("\u2019"): "'", ord("\u201c"): '"', ord("\u201d"): '"'}


def _normalise(text: str) -> list[str]:
    """NFKC (ligatures, no-break spaces), unified dashes and quotes, collapsed blanks per line."""
    text = unicodedata.normalize("NFKC", text)
    text = text.translate(_DASHES).translate(_QUOTES)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")
    lines = []
    for raw in text.split("\n"):
        line = re.sub(r"[ \t\u00a0\u2007\u202f\u200b]+", " ", raw).strip()
        # Table borders and specks read as punctuation at the edges carry no information.
        line = line.strip("|").strip()
        line = re.sub(r"^[.,:;'`\"_~*°•+=|-]+(?:\s+|$)", "", line)
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


# --------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------

# Section numbering such as "II.1.1)", "1.2.", "a)", "IV.2.2)" or a bullet in front of a label.
_NUMBERING = r"(?:(?:[IVX]+(?:\.\d+)*\)?|\d+(?:\.\d+)*[.)]?|[a-z]\)|[•*\-])\s*)?"
# What separates a label from its value.
_SEP = r"\s*(?:[:|=]|\s-\s|\.(?=\s))?\s*"


def _anchored(label: str, *, colon: bool = False) -> re.Pattern[str]:
    """A label at the start of a line; ``colon`` demands an explicit separator after it."""
    sep = r"\s*[:|]\s*" if colon else r"(?:" + _SEP + r"|$)"
    return re.compile(r"^" + _NUMBERING + r"(?:" + label + r")" + sep + r"(?P<value>.*)$", re.I)


_LABEL_LIKE = re.compile(r"^" + _NUMBERING + r"[A-Za-z][A-Za-z0-9 ().,/'&-]{0,60}?\s*[:|]")
_HEADING_LIKE = re.compile(r"^(?:Section\s+[IVX\d]+\b|[IVX]+\.\d+(?:\.\d+)*\)|\d+(?:\.\d+)+\)?\s)")
_CONNECTOR_END = re.compile(r"(?:\b(?:of|for|and|the|to|in|on|at|with|a|an|&)|[-,/&(])$", re.I)


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
) -> _Hit | None:
    """First value for the highest-priority label: same line, else the next non-label line."""
    skip = skip or set()
    for pattern in patterns:
        for i, line in enumerate(lines):
            if i in skip:
                continue
            m = pattern.match(line)
            if not m:
                continue
            value = m.group("value").strip()
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
    value = _TRAILING_JUNK.sub("", _LEADING_JUNK.sub("", value))
    return value or None


def _words(value: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", value.lower()))


# --------------------------------------------------------------------------------------------
# Amounts and currencies
# --------------------------------------------------------------------------------------------

# Codes that are also English words in capitals (ALL, TRY, MAD, SAR) are left out on purpose.
_ISO_CURRENCIES = frozenset(
    {"EUR", "GBP", "USD", "CHF", "SEK", "NOK", "DKK", "ISK", "PLN", "CZK", "HUF", "RON", "BGN"}
    | {"HRK", "RSD", "MKD", "BAM", "MDL", "UAH", "CAD", "AUD", "NZD", "JPY", "CNY", "INR", "ZAR"}
    | {"SGD", "HKD", "AED", "QAR", "KES", "NGN", "GHS", "EGP", "BRL", "MXN"}
)
_SYMBOLS = {"€": "EUR", "£": "GBP", "US$": "USD", "$": "USD"}
_WORD_CURRENCIES = {
    "euro": "EUR",
    "euros": "EUR",
    "pounds sterling": "GBP",
    "pound sterling": "GBP",
    "sterling": "GBP",
    "pounds": "GBP",
    "us dollars": "USD",
    "dollars": "USD",
    "swiss francs": "CHF",
}
_CUR = (
    r"(?:US\$|[€£$]|\b(?:" + "|".join(sorted(_ISO_CURRENCIES)) + r")\b"
    r"|\b(?:euros?|pounds? sterling|sterling|pounds|(?:us )?dollars|swiss francs)\b)"
)
_NUM = (
    r"(?<![\d.,])(?:\d{1,3}(?:(?:[,.'](?: )?| )\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?)"
    r"(?![\d])"
)
_MULT = r"(?:million|mio\.?|mln\.?|mn|m|billion|bn|thousand|k)\b"
_AMOUNT = re.compile(
    r"(?P<pre>" + _CUR + r")?\s?(?P<num>" + _NUM + r")(?:\s?(?P<mult>" + _MULT + r"))?"
    r"(?:\s?(?P<post>" + _CUR + r"))?(?P<pct>\s?%)?",
    re.I,
)
_CURRENCY_LABEL = re.compile(r"\b(?i:currency)\s*[:|]?\s*(?P<code>[A-Z]{3})\b")
_MULTIPLIERS = {
    "million": Decimal(1_000_000),
    "mio": Decimal(1_000_000),
    "mln": Decimal(1_000_000),
    "mn": Decimal(1_000_000),
    "m": Decimal(1_000_000),
    "billion": Decimal(1_000_000_000),
    "bn": Decimal(1_000_000_000),
    "thousand": Decimal(1000),
    "k": Decimal(1000),
}


def _currency_code(token: str | None) -> str | None:
    if not token:
        return None
    token = token.strip()
    if token in _SYMBOLS:
        return _SYMBOLS[token]
    if token.upper() in _ISO_CURRENCIES and token.isupper():
        return token.upper()
    return _WORD_CURRENCIES.get(token.lower())


def _parse_number(num: str, *, has_mult: bool) -> Decimal | None:
    s = re.sub(r"['\s]", "", num)
    if "," in s and "." in s:
        decimal_sep = "," if s.rfind(",") > s.rfind(".") else "."
        thousands = "." if decimal_sep == "," else ","
        s = s.replace(thousands, "").replace(decimal_sep, ".")
    elif "," in s or "." in s:
        sep = "," if "," in s else "."
        parts = s.split(sep)
        if len(parts) > 2 or (len(parts[1]) == 3 and not has_mult):
            s = "".join(parts)
        else:
            s = ".".join(parts)
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


@dataclass(frozen=True)
class _Amount:
    value: Decimal
    currency: str | None
    start: int
    end: int


def _amounts(text: str) -> list[_Amount]:
    """Money-like amounts in text, in reading order."""
    found = []
    for m in _AMOUNT.finditer(text):
        if m.group("pct"):
            continue
        num = m.group("num")
        mult = m.group("mult")
        # A bare 'm' right after a number is metres unless money is evidently meant.
        currency = _currency_code(m.group("pre")) or _currency_code(m.group("post"))
        if mult and mult.lower() == "m" and currency is None:
            mult = None
        value = _parse_number(num, has_mult=bool(mult))
        if value is None:
            continue
        grouped = bool(re.search(r"\d[,.' ]\d{3}(?!\d)", num))
        # A bare number is only plausible as money when big and not a year.
        bare = currency is None and not grouped and not mult
        if bare and (value < 1000 or re.fullmatch(r"(?:19|20)\d\d", num)):
            continue
        if mult:
            value = _tidy_decimal(value * _MULTIPLIERS[mult.lower().rstrip(".")])
        found.append(_Amount(value, currency, m.start(), m.end()))
    return found


def _tidy_decimal(value: Decimal) -> Decimal:
    """After scaling, drop a meaningless fraction (1.2 million: 1200000.0 -> 1200000)."""
    if value == value.to_integral_value():
        return value.quantize(Decimal(1))
    return value


# --------------------------------------------------------------------------------------------
# Dates
# --------------------------------------------------------------------------------------------

_MONTHS = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")"
_DATE_PATTERNS = [
    # 15 March 2027, 15th of March 2027, 15-Mar-2027
    re.compile(
        r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?[\s./-]*(?:of\s+)?" + _MONTH + r"\b\.?[\s,./-]*"
        r"(?P<year>\d{4})\b",
        re.I,
    ),
    # March 15, 2027
    re.compile(
        r"\b" + _MONTH + r"\b\.?\s*(?P<day>\d{1,2})(?:st|nd|rd|th)?\s*,?\s*(?P<year>\d{4})\b",
        re.I,
    ),
    # 2027-03-15 (also 2027/03/15)
    re.compile(r"\b(?P<year>\d{4})\s?[-/.]\s?(?P<month>\d{1,2})\s?[-/.]\s?(?P<day>\d{1,2})(?!\d)"),
    # 15/03/2027, 15.03.2027, 15-03-2027 (and OCR's 15:03.2027)
    re.compile(r"\b(?P<day>\d{1,2})\s?[/.:-]\s?(?P<month>\d{1,2})\s?[/.:-]\s?(?P<year>\d{4})\b"),
]
_TIME = re.compile(
    r"(?<![\d:.])(?P<hour>[01]?\d|2[0-3])\s?(?:[:h]|\.(?=\d\d))\s?(?P<minute>[0-5]\d)"
    r"(?::(?P<second>[0-5]\d))?(?!\d)(?:\s?(?:hrs|hours|h)\b\.?)?"
    r"(?:\s?(?P<ampm>[ap])\.?\s?m\b\.?)?"
    r"|(?<![\d:.])(?P<hour12>1[0-2]|0?[1-9])\s?(?P<ampm2>[ap])\.?\s?m\b\.?"
    r"|\b(?P<noon>noon|midday)\b",
    re.I,
)
_FIXED_ZONES = {
    "UTC": 0,
    "GMT": 0,
    "Z": 0,
    "WET": 0,
    "CET": 60,
    "BST": 60,
    "WEST": 60,
    "CEST": 120,
    "EET": 120,
    "EEST": 180,
    "EST": -300,
    "EDT": -240,
    "PST": -480,
    "PDT": -420,
}
_ZONE = re.compile(
    r"(?<![A-Za-z])(?P<abbr>CEST|CET|EEST|EET|WEST|WET|BST|GMT|UTC|EST|EDT|PST|PDT)(?![A-Za-z])"
    r"(?:\s?(?P<sign>[+-])\s?(?P<oh>\d{1,2})(?::?(?P<om>\d{2}))?)?"
    r"|(?<=\d)Z\b"
    r"|(?<![\w+-])(?P<sign2>[+-])(?P<oh2>\d{2}):?(?P<om2>\d{2})\b"
)
_NAMED_ZONES = [
    (
        re.compile(r"\b(?:Brussels|Luxembourg|Paris|Berlin|Amsterdam|Madrid|Rome)\s+time\b", re.I),
        "Europe/Brussels",
    ),
    (re.compile(r"\b(?:UK|London|British)\s+(?:local\s+)?time\b", re.I), "Europe/London"),
    (re.compile(r"\b(?:Irish|Dublin)\s+(?:local\s+)?time\b", re.I), "Europe/Dublin"),
]


def _zone_from(text: str, when: datetime) -> tzinfo | None:
    m = _ZONE.search(text)
    if m:
        if m.group("abbr"):
            minutes = _FIXED_ZONES[m.group("abbr")]
            if m.group("sign"):
                offset = int(m.group("oh")) * 60 + int(m.group("om") or 0)
                minutes += offset if m.group("sign") == "+" else -offset
            return timezone(timedelta(minutes=minutes))
        if m.group("sign2"):
            offset = int(m.group("oh2")) * 60 + int(m.group("om2"))
            return timezone(timedelta(minutes=offset if m.group("sign2") == "+" else -offset))
        return UTC
    for pattern, name in _NAMED_ZONES:
        if pattern.search(text):
            try:
                zone = ZoneInfo(name)
            except ZoneInfoNotFoundError:
                return None
            # Resolve to the fixed offset in force on that day so the value serialises simply.
            utcoffset = when.replace(tzinfo=zone).utcoffset()
            return timezone(utcoffset) if utcoffset is not None else None
    return None


@dataclass(frozen=True)
class _DateMatch:
    year: int
    month: int
    day: int
    start: int
    end: int


def _find_date(text: str) -> _DateMatch | None:
    best: _DateMatch | None = None
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            month_raw = m.group("month")
            month = _MONTHS.get(month_raw.lower()) if month_raw.isalpha() else int(month_raw)
            day, year = int(m.group("day")), int(m.group("year"))
            if month is None:
                continue
            if pattern is _DATE_PATTERNS[3] and month > 12 and day <= 12:
                day, month = month, day  # 03/15/2027 can only be month first
            try:
                datetime(year, month, day)
            except ValueError:
                continue
            if not 1990 <= year <= 2100:
                continue
            if best is None or m.start() < best.start:
                best = _DateMatch(year, month, day, m.start(), m.end())
            break
    return best


def _parse_deadline(text: str) -> datetime | None:
    text = _fix_digit_o(text)
    date = _find_date(text)
    if date is None:
        return None
    # Search the time outside the date itself (15.03.2027 is not 15:03).
    masked = text[: date.start] + " " * (date.end - date.start) + text[date.end :]
    times = list(_TIME.finditer(masked))
    after = [t for t in times if t.start() >= date.end]
    before = [t for t in times if t.end() <= date.start]
    chosen = after[0] if after else (before[-1] if before else None)
    hour = minute = second = 0
    if chosen is not None:
        if chosen.group("noon"):
            hour = 12
        elif chosen.group("hour12"):
            hour = int(chosen.group("hour12")) % 12
            if chosen.group("ampm2").lower() == "p":
                hour += 12
        else:
            hour, minute = int(chosen.group("hour")), int(chosen.group("minute"))
            second = int(chosen.group("second") or 0)
            ampm = chosen.group("ampm")
            if ampm and hour <= 12:
                hour = hour % 12 + (12 if ampm.lower() == "p" else 0)
    naive = datetime(date.year, date.month, date.day, hour, minute, second)
    if chosen is not None:
        zone_text = masked[chosen.end() : chosen.end() + 40]
        zone = _zone_from(zone_text, naive)
        if zone is None:
            zone = _zone_from(masked, naive)
    else:
        zone = _zone_from(masked[date.end : date.end + 40], naive)
    return naive.replace(tzinfo=zone) if zone is not None else naive


# --------------------------------------------------------------------------------------------
# Field-specific rules
# --------------------------------------------------------------------------------------------

_TITLE_LABELS = [
    _anchored(r"title\s+of\s+(?:the\s+)?(?:contract|tender|procurement|notice|project|call)"),
    _anchored(r"(?:tender|contract|procurement|project|notice|call)\s+title"),
    _anchored(r"name\s+of\s+(?:the\s+)?(?:contract|tender|project|procurement)"),
    _anchored(
        r"(?:subject|object)\s+(?:matter\s+)?of\s+(?:the\s+)?(?:contract|tender|procurement)"
    ),
    _anchored(r"title", colon=True),
    _anchored(r"subject", colon=True),
    _anchored(r"(?:description\s+of\s+)?(?:contract|tender)\s+name", colon=True),
]
_NOTICE_HEADING = re.compile(
    r"^(?:(?:invitation|call)\s+(?:to|for)\s+(?:tenders?|bids?|quotations?)"
    r"|request\s+for\s+(?:proposals?|tenders?|quotations?)|contract\s+notice|tender\s+notice"
    r"|notice\s+of\s+(?:invitation\s+to\s+tender|tender|procurement)"
    r"|(?:RFP|RFT|RFQ|ITT))\b(?P<rest>.*)$",
    re.I,
)

_AUTHORITY_LABELS = [
    _anchored(r"official\s+name"),
    _anchored(
        r"(?:name\s+of\s+(?:the\s+)?)?(?:contracting|awarding|procuring|purchasing|issuing|"
        r"tendering)\s+(?:authority|entity|body|agency|organi[sz]ation)(?:\s+name)?"
    ),
    _anchored(r"(?:issued|published)\s+by"),
    _anchored(r"(?:buyer|purchaser|procuring\s+entity|employer|client|authority)", colon=True),
    _anchored(r"(?:organi[sz]ation|agency|institution)(?:\s+name)?", colon=True),
]
_AUTHORITY_WORDS = re.compile(
    r"\b(?:ministry|council|authority|agency|department|municipality|city\s+of|county|"
    r"university|hospital|NHS|trust|government|commission|office|board|institute|region|"
    r"district|borough|service|directorate|administration)\b",
    re.I,
)

_REF_LABELS = [
    _anchored(
        r"(?:(?:tender|contract|procurement|notice|project|file|our|internal|bid|solicitation|"
        r"ITT|RFP|RFQ|RFT|document|dossier)\s+)?(?:ref(?:erence)?\.?|ref)\s*"
        r"(?:no\.?|number|num\.?|nr\.?|#|id|code)"
    ),
    _anchored(
        r"(?:(?:tender|contract|procurement|notice|project|file|our|internal|bid|solicitation|"
        r"ITT|RFP|RFQ|RFT|document|dossier)\s+)?ref(?:erence)?\.?",
        colon=True,
    ),
    _anchored(
        r"(?:tender|contract|procurement|solicitation|bid|ITT|RFP|RFQ|RFT|notice|file|"
        r"identification)\s*(?:no\.?|number|nr\.?|#|id)"
    ),
]
_INLINE_REF = re.compile(
    r"\b(?:ref(?:erence)?\.?(?:\s*(?:no\.?|number))?\s*[:#]|ref\.\s)\s*(?P<value>\S.*)$", re.I
)
_TED_NUMBER = re.compile(r"\b\d{4}/S\s?\d{3}-\d{6}\b")
_REF_TOKEN = re.compile(r"^[A-Z0-9][A-Z0-9/._\-]*$")

_DEADLINE_SPECIFIC = [
    re.compile(
        r"time[\s-]*limits?\s+for\s+(?:the\s+)?receipt\s+of\s+(?:tenders|bids|offers|"
        r"applications|requests|proposals)",
        re.I,
    ),
    re.compile(
        r"deadline\s+for\s+(?:the\s+)?(?:receipt|submission|submitting|lodg\w*|return)"
        r"(?:\s+of\s+(?:tenders|bids|offers|proposals|applications|responses|requests))?",
        re.I,
    ),
    re.compile(
        r"(?:tenders?|bids?|offers?|proposals?)\s+(?:submission\s+|return\s+)?deadline", re.I
    ),
    re.compile(r"submission\s+(?:deadline|closing\s+date|due\s+date)", re.I),
    re.compile(r"(?:closing|return|due)\s+date(?:\s+and\s+time)?", re.I),
    re.compile(r"closing\s+time", re.I),
    re.compile(
        r"(?:tenders|bids|offers|proposals|responses|applications)\s+(?:must|shall|should|are\s+to)"
        r"\s+be\s+(?:submitted|received|delivered|uploaded|lodged|returned)",
        re.I,
    ),
    re.compile(r"latest\s+(?:date|time)\s+for\s+(?:the\s+)?(?:receipt|submission)", re.I),
]
_DEADLINE_GENERIC = re.compile(r"\bdeadline\b", re.I)
_DEADLINE_EXCLUDE = re.compile(
    r"clarif|question|quer(?:y|ies)|enquir|inquir|site\s+visit|opening|standstill|award|"
    r"validity|dispatch|publication|expression\s+of\s+interest",
    re.I,
)
_DEADLINE_STOP = re.compile(r"opening|dispatch|publication|clarif|question|enquir|validity", re.I)

_TOTAL_VALUE_LABELS = re.compile(
    r"estimated\s+total\s+(?:contract\s+)?value|total\s+estimated\s+(?:contract\s+)?(?:value|budget|amount)"
    r"|total\s+(?:contract\s+)?value|total\s+(?:estimated\s+)?budget|overall\s+(?:estimated\s+)?"
    r"(?:value|budget)|estimated\s+(?:overall|aggregate)\s+value|total\s+amount",
    re.I,
)
_VALUE_LABELS = re.compile(
    r"estimated\s+(?:contract\s+|procurement\s+|tender\s+)?(?:value|budget|amount|cost|price)"
    r"|contract\s+value|value\s+excluding\s+VAT|value\s+\(?excl|(?:indicative|approximate|maximum|"
    r"anticipated|expected|available)\s+(?:contract\s+)?(?:value|budget)|\bbudget\b"
    r"|value\s+of\s+(?:the\s+)?(?:contract|framework|procurement)|\bvalue\s*[:|]",
    re.I,
)
_LOT_MENTION = re.compile(
    r"\blot\s*(?:no\.?|number|n[o°]\.?|#)?\s*\d|\b(?:of\s+the|per|this|each|the)\s+lot\b", re.I
)

_LOT_HEADER = re.compile(
    r"^" + _NUMBERING + r"lot\s*(?:no\.?|number|nr\.?|n[o°]\.?|#)?\s*[:.-]?\s*"
    r"(?P<num>\d{1,2}|['`]?[lIi|!\]t](?=\s*:))"
    r"(?:\s*(?:[:.)|]|\s-\s?|-\s)\s*(?P<rest>.*)|\s*$)",
    re.I,
)
_LOT_HEADER_NO_NUMBER = re.compile(r"^" + _NUMBERING + r"lot\s*:\s*(?P<rest>[A-Za-z].{3,})$", re.I)
_INLINE_LOT_NO = re.compile(r"\s*\blot\s*(?:no\.?|number|nr\.?)\s*:?\s*(?P<num>\d{1,2})\s*$", re.I)
# "Lot | Title | Estimated value": a header row (no lot number, no amount on it).
_LOT_TABLE_HEADER = re.compile(
    r"^lot(?:\s*(?:no\.?|number|#))?\b(?![\s.:#-]*\d)(?!.*\d{3})"
    r".*\b(?:title|description|name|subject|value)\b",
    re.I,
)
_LOT_TABLE_ROW = re.compile(r"^[\W_]*(?:(?P<num>\d{1,2})(?![\d,.]\d)[\W_]*)?(?P<rest>[A-Za-z].*)$")
_LOT_BLOCK_END = re.compile(
    r"^\W*(?:Section\b|(?:III|IV|V|VI)\.\d|total\b)|" + _TOTAL_VALUE_LABELS.pattern,
    re.I,
)
_TITLE_TAIL = re.compile(
    r"(?:\s*[-,;:(\[|]\s*)?(?:\s*(?:total\s+)?(?:estimated|est\.|approx\.?|approximate|indicative|"
    r"maximum|max\.)?\s*(?:contract\s+)?(?:value|budget|amount|cost|worth)?"
    r"(?:\s*\(?\s*(?:excl\.?|excluding|ex\.?|net\s+of)\s*VAT\s*\)?)?\s*(?:of|at|:|=)?\s*)$",
    re.I,
)
_LOT_TITLE_LINE = re.compile(r"^" + _NUMBERING + r"(?:lot\s+)?title\s*[:|]\s*(?P<value>.+)$", re.I)
_CPV = re.compile(r"(?<![\w-])((?:[0-9O] ?){7}[0-9O]) ?- ?([0-9O])(?![\w])")
_EMAIL = re.compile(
    r"(?<![\w.+-])([A-Za-z0-9][\w.+-]*) ?@ ?"
    r"([A-Za-z0-9-]+(?:(?:\.| \.|\. (?=[a-z]))[A-Za-z0-9-]+)+)"
)


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


def _title(lines: Sequence[str], lot_lines: set[int], authority: str | None) -> str | None:
    not_lot = re.compile(r"^(?!lot\b)", re.I)
    hit = _find_labelled(lines, _TITLE_LABELS, skip=lot_lines, accept=not_lot)
    if hit is not None:
        value = _clean_text_value(_INLINE_LOT_NO.sub("", hit.value))
        return _complete_from_heading(lines, value) if value else None
    # "INVITATION TO TENDER for the supply of ..." or the heading followed by the title line.
    for i, line in enumerate(lines[:15]):
        m = _NOTICE_HEADING.match(line)
        if not m:
            continue
        rest = re.sub(r"^\s*[:\-]?\s*", "", m.group("rest"))
        if re.match(r"(?:for|:)\s", rest, re.I):
            return _clean_text_value(re.sub(r"^(?:for|:)\s+(?:the\s+)?", "", rest, flags=re.I))
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
            return _clean_text_value(hit2.value)
        break
    return None


def _authority(lines: Sequence[str]) -> str | None:
    hit = _find_labelled(lines, _AUTHORITY_LABELS, wrap=False)
    value: str | None = None
    if hit is not None:
        value = hit.value
        # Wrapped only when the break is evidently mid-name.
        end = hit.end
        while end + 1 < len(lines) and lines[end + 1] and not _looks_like_label(lines[end + 1]):
            if not (lines[end + 1][0].islower() or _CONNECTOR_END.search(value.rstrip(","))):
                break
            value = f"{value} {lines[end + 1]}"
            end += 1
    else:
        # No label: a header line naming a public body, above the notice heading.
        for line in [ln for ln in lines if ln][:6]:
            if _NOTICE_HEADING.match(line) or _looks_like_label(line):
                break
            if _AUTHORITY_WORDS.search(line) and len(line) <= 90 and not re.search(r"\d", line):
                value = line
                break
    if value is None:
        return None
    # Cut the postal address that often follows the name on the same line.
    parts = [p.strip() for p in value.split(",")]
    kept = [parts[0]]
    for part in parts[1:]:
        if re.search(r"\d", part) or "@" in part:
            break
        kept.append(part)
    return _clean_text_value(", ".join(kept))


def _normalise_reference(token: str) -> str:
    """O/0 confusion per segment: ``2O27``/``OO42`` are numbers, ``M0H`` is a word."""
    out = []
    for seg in re.split(r"([/._-])", token):
        if re.fullmatch(r"[0-9Oo]+", seg) and re.search(r"\d", seg):
            seg = seg.replace("O", "0").replace("o", "0")
        elif re.search(r"\d", seg) and re.search(r"[A-Z]", seg):
            # A numeric run inside a word (ITT2O27): only the O after a digit is a zero, unless
            # the segment is a word with a single 0 in it (M0H).
            if re.fullmatch(r"[A-Z]*0[A-Z]+|[A-Z]+0[A-Z]*", seg):
                seg = seg.replace("0", "O")
            else:
                seg = re.sub(r"(?<=\d)O+", lambda m: "0" * len(m.group()), seg)
        out.append(seg)
    return "".join(out)


def _reference_from(value: str) -> str | None:
    value = re.sub(r"^\s*(?:no\.?|number|[:#])\s*", "", value, flags=re.I)
    ted = _TED_NUMBER.search(value)
    if ted and ted.start() < 3:
        return re.sub(r"/S\s?", "/S ", ted.group())
    value = re.sub(r"\s*([/_-])\s*", r"\1", value)
    value = re.sub(r"(?<=\w)\s*\.\s*(?=\d)", ".", value)
    tokens: list[str] = []
    for raw in value.split():
        tok = raw.strip("()[],;\"'")
        tok = tok.rstrip("./_-")
        if not _REF_TOKEN.match(tok) or (raw.endswith((":", ",", ";")) and tokens):
            if raw.endswith((",", ";")) and _REF_TOKEN.match(tok):
                tokens.append(tok)
            break
        tokens.append(tok)
        if len(tokens) == 3 or re.search(r"\d", tok):
            break
    ref = " ".join(tokens)
    if not ref or not re.search(r"[\dO]", ref):
        return None
    ref = _normalise_reference(ref)
    if not re.search(r"\d", ref) or len(ref) < 3:
        return None
    return ref


def _reference(lines: Sequence[str]) -> str | None:
    for pattern in _REF_LABELS:
        for i, line in enumerate(lines):
            m = pattern.match(line)
            if not m:
                continue
            value = m.group("value").strip()
            if not value and i + 1 < len(lines):
                value = lines[i + 1]
            ref = _reference_from(value)
            if ref:
                return ref
    for line in lines:
        m = _INLINE_REF.search(line)
        if m:
            ref = _reference_from(m.group("value"))
            if ref:
                return ref
    return None


def _deadline(lines: Sequence[str]) -> datetime | None:
    def window(i: int, start: int) -> str:
        parts = [lines[i][start:]]
        for j in range(i + 1, min(i + 4, len(lines))):
            if _DEADLINE_STOP.search(lines[j]) or _LOT_HEADER.match(lines[j]):
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
                    return found
    for i, line in enumerate(lines):
        m = _DEADLINE_GENERIC.search(line)
        if m and not _DEADLINE_EXCLUDE.search(line):
            found = _parse_deadline(window(i, m.end()))
            if found is not None:
                return found
    return None


def _cpv_check_digit(stem: str) -> int:
    """CPV check digit: digits weighted 3, 7, 1, 3, 7, 1, 3, 7 from the left, summed, mod 10."""
    return sum(int(d) * w for d, w in zip(stem, (3, 7, 1, 3, 7, 1, 3, 7), strict=True)) % 10


def _cpv_codes(text: str) -> list[str]:
    """CPV codes in order of appearance, deduplicated.

    A check digit that disagrees with its 8-digit stem is recomputed from the stem: the stem
    carries the meaning, and a wrong check digit is the likelier reading error to leave visible.
    """
    codes: list[str] = []
    for m in _CPV.finditer(text):
        raw = m.group(1).replace(" ", "")
        if sum(c.isdigit() for c in raw) < 2:
            continue
        stem = raw.replace("O", "0")
        code = f"{stem}-{_cpv_check_digit(stem)}"
        if code not in codes:
            codes.append(code)
    return codes


def _one_edit_apart(a: str, b: str) -> bool:
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def _spellfix_domain(domain: str, text: str, authority: str | None) -> str:
    """Repair an OCR-garbled domain label with the spelling the rest of the notice uses.

    "ravensdort" in the address of the "Municipality of Ravensdorf" is a misread ``f``. A label is
    replaced only by a word one edit away that is either a word of the authority's name seen at
    least as often in the notice, or any word seen three times and more than twice as often.
    """
    name_words = set(re.findall(r"[a-z0-9]{5,}", (authority or "").lower()))
    counts: dict[str, int] = {}
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        counts[word] = counts.get(word, 0) + 1

    def fix(label: str) -> str:
        low = label.lower()
        if len(low) < 4:
            return label
        own = counts.get(low, 0)
        best, best_count = label, own
        for word, n in counts.items():
            strong = n >= 3 and n > 2 * own
            named = word in name_words and n >= own
            if (strong or named) and n > best_count and _one_edit_apart(low, word):
                best, best_count = word, n
        return best

    return "".join(fix(part) if part.isalnum() else part for part in re.split(r"([.-])", domain))


def _email(text: str, authority: str | None) -> str | None:
    for m in _EMAIL.finditer(text):
        local, domain = m.group(1), re.sub(r"\s", "", m.group(2))
        domain = domain.rstrip(".-")
        if "." not in domain:
            continue
        return f"{local.rstrip('.')}@{_spellfix_domain(domain, text, authority)}"
    return None


def _value_window(lines: Sequence[str], i: int, start: int) -> tuple[str, str]:
    """The value text after a label (this line or the next two) and a wider text for currency."""
    main = _fix_digit_o(lines[i][start:])
    extra: list[str] = []
    for j in range(i + 1, min(i + 3, len(lines))):
        if _LOT_HEADER.match(lines[j]) or _DEADLINE_GENERIC.search(lines[j]):
            break
        extra.append(_fix_digit_o(lines[j]))
    return main, "\n".join([main, *extra])


def _amount_after_label(
    lines: Sequence[str], i: int, start: int, fallback_currency: str | None
) -> tuple[Decimal, str | None] | None:
    main, wide = _value_window(lines, i, start)
    found = _amounts(main)
    if not found:
        if main.strip() and re.search(r"[A-Za-z]{4}", main):
            # The label line has other words but no amount: look at the next line only when
            # this line merely ends with the label (TED's "II.1.5) Estimated total value").
            rest = re.sub(r"\(.*?\)", "", main)
            if re.search(r"[A-Za-z]{4}", rest) and not re.fullmatch(
                r"[\s:|]*(?:\(?excl\w*\.?\s+VAT\)?|excluding\s+VAT|net)?[\s:|]*", rest, re.I
            ):
                return None
        found = _amounts(wide)
        if not found:
            return None
    amount = found[0]
    currency = amount.currency
    if currency is None:
        cm = _CURRENCY_LABEL.search(wide) or re.search(r"\((?P<code>[A-Z]{3})\)", lines[i])
        if cm and cm.group("code") in _ISO_CURRENCIES:
            currency = cm.group("code")
        else:
            near = [a.currency for a in _amounts(wide) if a.currency]
            currency = near[0] if near else fallback_currency
    return amount.value, currency


def _document_currency(text: str) -> str | None:
    """The currency when the whole notice only ever mentions one."""
    seen = {a.currency for a in _amounts(_fix_digit_o(text)) if a.currency}
    for m in _CURRENCY_LABEL.finditer(text):
        if m.group("code") in _ISO_CURRENCIES:
            seen.add(m.group("code"))
    return seen.pop() if len(seen) == 1 else None


@dataclass
class _LotDraft:
    number: int
    title: str | None
    value: Decimal | None
    lines: set[int]


def _split_title_and_amount(rest: str) -> tuple[str | None, Decimal | None]:
    rest = _fix_digit_o(rest)
    found = _amounts(rest)
    money = [a for a in found if a.currency is not None or a.value >= 1000]
    if not money:
        title = re.split(r"\s+\bCPV\b|\s{2,}", rest)[0]
        return _clean_text_value(title.strip(" -:.")), None
    # A speck of OCR noise next to a currency code ("- 7 SEK 700 000,00") reads as a tiny
    # amount; a contract's value is not that small when a real one follows.
    amount = next((a for a in money if a.value >= 1000), money[0])
    prefix = rest[: amount.start]
    tail = _TITLE_TAIL.search(prefix)
    title = prefix[: tail.start()] if tail else prefix
    return _clean_text_value(title.strip(" -:.(")), amount.value


def _same_title(a: str, b: str, *, strict: bool = False) -> bool:
    """Equal word for word, or one a prefix of the other (OCR junk trailing a table cell).

    ``strict`` allows only a short speck of noise after the common prefix ("... years in").
    """
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return False
    short, long_ = sorted((wa, wb), key=len)
    if long_ == short:
        return True
    if not long_.startswith(short + " ") or len(short.split()) < 2:
        return False
    tail = long_[len(short) :].split()
    return not strict or (len(tail) <= 2 and all(len(t) <= 3 for t in tail))


def _agreed_title(first: str | None, second: str | None) -> str | None:
    """Two copies of a lot title (heading and table row): drop noise only one of them has."""
    if first and second and _same_title(first, second, strict=True):
        return min(first, second, key=lambda t: len(_words(t)))
    return first or second


def _merge_table(lines: Sequence[str], header: int, drafts: dict[int, _LotDraft]) -> set[int]:
    """Read the rows under a lot table header into ``drafts``; returns the lines used.

    OCR often loses a lone lot number in the first column. A row without one is matched to a
    lot already known by its title, else numbered from its neighbours in the table.
    """
    rows: list[tuple[int, int | None, str, Decimal | None]] = []
    skipped = 0
    for j in range(header + 1, min(header + 40, len(lines))):
        row = lines[j].replace("|", " ")
        if not re.search(r"[A-Za-z0-9]", row):
            continue
        m = _LOT_TABLE_ROW.match(row)
        title, value = _split_title_and_amount(m.group("rest")) if m else (None, None)
        num = int(m.group("num")) if m and m.group("num") else None
        if m is None or title is None or (value is None and num is None):
            if not rows and skipped < 2:  # a wrapped header cell before the first row
                skipped += 1
                continue
            break
        rows.append((j, num, title, value))
    numbers: list[int | None] = []
    for _j, num, title, _value in rows:
        known = [n for n, d in drafts.items() if d.title and _same_title(d.title, title)]
        numbers.append(known[0] if len(known) == 1 else num)
    for _ in range(2):  # fill gaps from neighbours: 1, ?, 3 -> 2; ?, 2 -> 1
        for k, n in enumerate(numbers):
            if n is not None:
                continue
            before = numbers[k - 1] if k > 0 else None
            after = numbers[k + 1] if k + 1 < len(numbers) else None
            if before is not None:
                numbers[k] = before + 1
            elif after is not None and after > 1:
                numbers[k] = after - 1
    used = {header}
    for (j, _num, title, value), n in zip(rows, numbers, strict=True):
        used.add(j)
        if n is None or n < 1:
            continue
        if n not in drafts:
            drafts[n] = _LotDraft(n, title, value, {header, j})
        else:
            d = drafts[n]
            d.title = _agreed_title(d.title, title)
            d.value = d.value if d.value is not None else value
            d.lines |= {header, j}
    return used


def _lots(lines: Sequence[str]) -> tuple[list[_LotDraft], set[int]]:
    """Lots with the line indexes they occupy (so that global fields can skip them)."""
    found: list[tuple[int, int | None, str]] = []
    for i, line in enumerate(lines):
        m = _LOT_HEADER.match(line)
        if m:
            raw = m.group("num")
            num = int(raw) if raw.isdigit() else 1  # "Lot l:", "Lot I:", "Lot't:" misread 1
            if num >= 1:
                found.append((i, num, (m.group("rest") or "").strip()))
            continue
        bare = _LOT_HEADER_NO_NUMBER.match(line)
        if bare:  # "Lot: Supply of ..." - the number was lost; see below
            found.append((i, None, bare.group("rest").strip()))
            continue
        inline = _INLINE_LOT_NO.search(line)
        if inline and re.match(r"^" + _NUMBERING + r"title\s*:", line, re.I):
            found.append((i, int(inline.group("num")), ""))
    # A header that lost its number sits between numbered ones: "Lot:", "Lot 2:" -> 1.
    headers: list[tuple[int, int, str]] = []
    for k, (i, maybe, rest) in enumerate(found):
        if maybe is None:
            after = found[k + 1][1] if k + 1 < len(found) else None
            before = found[k - 1][1] if k > 0 else None
            maybe = before + 1 if before else (after - 1 if after and after > 1 else None)
            if maybe is None or any(n == maybe for _, n, _ in found):
                continue
        headers.append((i, maybe, rest))

    drafts: dict[int, _LotDraft] = {}
    used: set[int] = set()
    for k, (i, num, rest) in enumerate(headers):
        next_header = headers[k + 1][0] if k + 1 < len(headers) else len(lines)
        block_end = min(next_header, i + 15)
        for j in range(i + 1, block_end):
            if _LOT_BLOCK_END.search(lines[j]) or _DEADLINE_GENERIC.search(lines[j]):
                block_end = j
                break
        lot_lines = {i}
        title: str | None = None
        value: Decimal | None = None
        rest = _clean_text_value(rest) or ""
        if rest:
            hit = _continue_value(lines, i, rest, wrap_width=200)
            title, value = _split_title_and_amount(hit.value)
            lot_lines.update(range(i, hit.end + 1))
        else:
            same = _LOT_TITLE_LINE.match(lines[i])
            if same:
                title = _clean_text_value(_INLINE_LOT_NO.sub("", same.group("value")))
            else:
                prev_end = headers[k - 1][0] if k > 0 else -1
                candidates = [j for j in (i - 1, i - 2) if j > prev_end and j >= 0]
                candidates += [j for j in (i + 1, i + 2) if j < block_end]
                for j in candidates:
                    tm = _LOT_TITLE_LINE.match(lines[j])
                    if tm and not (j > i and any(h[0] in (j + 1, j + 2) for h in headers)):
                        title = _clean_text_value(tm.group("value"))
                        lot_lines.add(j)
                        break
        if value is None:
            for j in range(i + 1, block_end):
                m = _VALUE_LABELS.search(lines[j])
                if m and not _TOTAL_VALUE_LABELS.search(lines[j]):
                    got = _amount_after_label(lines, j, m.end(), None)
                    if got is not None:
                        value = got[0]
                        lot_lines.add(j)
                        break
        used |= lot_lines
        if title is None and value is None:
            continue
        if num in drafts:
            d = drafts[num]
            d.title = _agreed_title(d.title, title)
            d.value = d.value if d.value is not None else value
            d.lines |= lot_lines
        else:
            drafts[num] = _LotDraft(num, title, value, lot_lines)

    # Tables: "Lot | Title | Estimated value (EUR)" followed by "1 Microscopes 400,000".
    for i, line in enumerate(lines):
        if _LOT_TABLE_HEADER.match(line):
            used |= _merge_table(lines, i, drafts)
    # A table whose header OCR lost: a row naming a known lot's title, then an amount.
    for d in drafts.values():
        if d.value is not None or not d.title or len(_words(d.title).split()) < 3:
            continue
        for j, line in enumerate(lines):
            row = _LOT_TABLE_ROW.match(line)
            if j in used or _LOT_HEADER.match(line) or row is None:
                continue
            title, value = _split_title_and_amount(row.group("rest"))
            if value is not None and title and _same_title(title, d.title, strict=True):
                d.value = value
                used.add(j)
                break
    return [drafts[n] for n in sorted(drafts)], used


def _estimated_value(
    lines: Sequence[str], lot_lines: set[int], text: str
) -> tuple[Decimal | None, str | None]:
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
            if got is not None:
                return got
    return None, None


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def extract_offline(text: str) -> TenderFields:
    """Extract tender fields from OCR text with rules only; unknown fields stay None/empty."""
    lines = _normalise(text)
    joined = "\n".join(lines)
    drafts, lot_lines = _lots(lines)
    value, currency = _estimated_value(lines, lot_lines, joined)
    lots = [Lot(number=d.number, title=d.title or "", estimated_value=d.value) for d in drafts]
    authority = _authority(lines)
    return TenderFields(
        title=_title(lines, lot_lines, authority),
        issuing_authority=authority,
        reference=_reference(lines),
        submission_deadline=_deadline(lines),
        estimated_value=value,
        currency=currency if value is not None else None,
        cpv_codes=_cpv_codes(joined),
        lots=lots,
        contact_email=_email(joined, authority),
    )
