"""Dates, times and time zones of a deadline."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from babel.dates import get_month_names

from pg_pipeline_documents.extract_offline.labels import VOCABULARY
from pg_pipeline_documents.extract_offline.normalise import _fix_digit_o

_EN_MONTHS = {
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


def _month_names() -> dict[str, int]:
    """English names and abbreviations, plus the full month names of the languages below.

    The names come from the CLDR data that babel ships, so a language is one entry in
    ``MONTH_LOCALES``; abbreviations other than English ones are left out (``mar`` is March in
    Spanish, ``mai`` May in French: full names only keep the table unambiguous).
    """
    names = dict(_EN_MONTHS)
    for locale in MONTH_LOCALES:
        for number, name in get_month_names("wide", locale=locale).items():
            for form in {name.lower(), unicodedata.normalize("NFKC", name.lower())}:
                names.setdefault(form, number)
    return names


MONTH_LOCALES = ("de", "fr", "nl", "it", "es", "pt", "sv", "da", "pl", "ru", "uk", "bg")
_MONTHS = _month_names()


_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")"


_DATE_PATTERNS = [
    # 15 March 2027, 15th of March 2027, the 15th day of March 2027, 15-Mar-2027, 15 de marzo
    # de 2027
    re.compile(
        r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?[\s./-]*(?:day\s+)?(?:of\s+|de\s+)?"
        + _MONTH
        + r"\b\.?[\s,./-]*(?:de\s+)?(?P<year>\d{4})\b",
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
    # 15/06/23 (BOAMP's "15/06/23 à 12h00"): slashes only, as dots make section numbers
    # ("5.1.12"), and a year of this century's first half.
    re.compile(r"(?<![\d/.])(?P<day>\d{1,2})/(?P<month>\d{1,2})/(?P<year>[1-5]\d)(?![\d/.]|\.\d)"),
]
#: The patterns of numeric dates, day or month first.
_NUMERIC = (_DATE_PATTERNS[3], _DATE_PATTERNS[4])


_TIME = re.compile(
    r"(?<![\d:.+])(?<!UTC-)(?<!GMT-)(?P<hour>[01]?\d|2[0-3])\s?(?:[:h]|\.(?=\d\d))\s?(?P<minute>[0-5]\d)"
    r"(?::(?P<second>[0-5]\d))?(?!\d)(?:\s?(?:hrs|hours|h)\b\.?)?"
    r"(?:\s?(?P<ampm>[ap])\.?\s?m\b\.?)?"
    r"|(?<![\d:.])(?P<hour12>1[0-2]|0?[1-9])\s?(?P<ampm2>[ap])\.?\s?m\b\.?"
    r"|\b(?P<noon>noon|midday)\b"
    # The full hour in words: "14 Uhr", "11 heures", "11 heures 30", "14h".
    r"|(?<![\d:.,])(?P<whole>[01]?\d|2[0-3])[ ]?(?:uhr|heures?|h)\b(?:[ ]?(?P<wmin>[0-5]\d)\b)?"
    # A 24-hour time without a colon, as forms and military notices print it: "1700 hrs",
    # "1400 local time", "1400Z".
    r"|(?<![\d:.,/-])(?P<mil>[01]\d|2[0-3])(?P<milm>[0-5]\d)\s?"
    r"(?:hrs\b|hours\b|h\b|local\b|lt\b|(?=Z\b|(?:[ECMP][SD]T|UTC|GMT|CET|CEST)\b))\.?",
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
    "CST": -360,
    "CDT": -300,
    "MST": -420,
    "MDT": -360,
    "PST": -480,
    "PDT": -420,
}


_ZONE = re.compile(
    r"(?<![A-Za-z])(?P<abbr>CEST|CET|EEST|EET|WEST|WET|BST|GMT|UTC|EST|EDT|CST|CDT|MST|MDT|PST|PDT)"
    r"(?![A-Za-z])"
    r"(?:\s?(?P<sign>[+-])\s?(?P<oh>\d{1,2})(?::?(?P<om>\d{2}))?)?"
    r"|(?<=\d)Z\b"
    r"|(?<![\w+-])(?P<sign2>[+-])(?P<oh2>\d{2}):?(?P<om2>\d{2})\b"
)


_NAMED_ZONES = [
    (re.compile("|".join(f"(?:{f})" for f in fragments), re.I), name)
    for name, fragments in VOCABULARY["zones"].items()
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


# "3:30 p.m. Eastern": a US zone named by its region alone, believed only right after the time
# (elsewhere "Central" or "Pacific" is as likely a name).
_BARE_US_ZONE = re.compile(
    r"^\W{0,3}(?P<region>Eastern|Central|Mountain|Pacific)(?:\s+(?:Standard|Daylight))?\b"
)
_US_REGION_ZONES = {
    "eastern": "America/New_York",
    "central": "America/Chicago",
    "mountain": "America/Denver",
    "pacific": "America/Los_Angeles",
}


def _bare_us_zone(text: str, when: datetime) -> tzinfo | None:
    m = _BARE_US_ZONE.match(text.split("\n", 1)[0])
    if m is None:
        return None
    offset = when.replace(tzinfo=ZoneInfo(_US_REGION_ZONES[m.group("region").lower()])).utcoffset()
    return timezone(offset) if offset is not None else None


@dataclass(frozen=True)
class _DateMatch:
    year: int
    month: int
    day: int
    start: int
    end: int
    # "10/08/2026": day first in Europe, month first in the United States.
    ambiguous: bool = False


# French ordinals after a day, with what a superscript becomes in a text layer: "1er", "1.e.r",
# "1 er". Blanked to the same length so that positions in the text stay where they were.
_ORDINAL = re.compile(r"(?<=\b\d)(?:\s?\.?\s?e\s?\.?\s?r\b\.?|er\b)", re.I)


def _without_ordinals(text: str) -> str:
    return _ORDINAL.sub(lambda m: " " * len(m.group()), text)


def _find_date(text: str, order: str | None = None) -> _DateMatch | None:
    """The first date in the text; ``order`` "mdy" reads numeric dates month first (a U.S.
    form's own order), otherwise they are day first unless only month first is possible."""
    text = _without_ordinals(text)
    best: _DateMatch | None = None
    for pattern in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            month_raw = m.group("month")
            month = _MONTHS.get(month_raw.lower()) if month_raw.isalpha() else int(month_raw)
            day, year = int(m.group("day")), int(m.group("year"))
            year += 2000 if year < 100 else 0
            if month is None:
                continue
            if pattern in _NUMERIC and (
                (month > 12 and day <= 12) or (order == "mdy" and day <= 12)
            ):
                day, month = month, day  # 03/15/2027 can only be month first
            try:
                datetime(year, month, day)
            except ValueError:
                continue
            if not 1990 <= year <= 2100:
                continue
            ambiguous = (
                order is None
                and pattern in _NUMERIC
                and day != month
                and max(day, month) <= 12
                and not re.search(r"\d\s?\.\s?\d", m.group())  # dots are always day first
            )
            if best is None or m.start() < best.start:
                best = _DateMatch(year, month, day, m.start(), m.end(), ambiguous)
            break
    return best


# What makes a numeric date American: dollars or a US time zone beside it.
_US_CUE = re.compile(
    r"\$|\bUSD\b|\b(?:E[SD]T|C[SD]T|M[SD]T|P[SD]T|ET)\b"
    r"|\b(?:Eastern|Central|Mountain|Pacific)(?:\s+(?:Standard|Daylight))?\s+Time\b"
)


def _date_spans(text: str) -> list[tuple[int, int]]:
    """Where anything shaped like a date is printed (numeric or with a month name)."""
    return [m.span() for pattern in _DATE_PATTERNS for m in pattern.finditer(text)]


def _parse_deadline(text: str, order: str | None = None) -> datetime | None:
    """The first date in the text with the time and zone printed with it; ``order`` as in
    ``_find_date``."""
    text = _without_ordinals(_fix_digit_o(text))
    date = _find_date(text, order)
    if date is None:
        return None
    # Search the time outside the date itself (15.03.2027 is not 15:03), and outside any other
    # date in the window (the next line's "2.03.2027" holds no time either).
    masked = text
    for start, end in [(date.start, date.end), *_date_spans(text)]:
        masked = masked[:start] + " " * (end - start) + masked[end:]
    times = list(_TIME.finditer(masked))
    # A time on the date's own line wins ("3:00 p.m. Eastern Time on March 2, 2027"): the
    # lines after it may hold another date's time.
    line_start = masked.rfind("\n", 0, date.start) + 1
    line_end = masked.find("\n", date.end)
    line_end = len(masked) if line_end < 0 else line_end
    after = [t for t in times if t.start() >= date.end]
    same_after = [t for t in after if t.start() < line_end]
    before = [t for t in times if t.end() <= date.start]
    same_before = [t for t in before if t.start() >= line_start]
    chosen = next(iter(same_after or same_before[-1:] or after[:1] or before[-1:]), None)
    hour = minute = second = 0
    if chosen is not None:
        if chosen.group("noon"):
            hour = 12
        elif chosen.group("whole"):
            hour, minute = int(chosen.group("whole")), int(chosen.group("wmin") or 0)
        elif chosen.group("mil"):
            hour, minute = int(chosen.group("mil")), int(chosen.group("milm"))
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
    if date.ambiguous:
        # A numeric date that reads both ways (10/08/2026) is day first in Europe, but beside
        # dollars, a US time zone or a 12-hour clock it may be month first: then either
        # reading is a guess, and a wrong deadline costs more than a missing one.
        twelve_hour = chosen is not None and bool(chosen.group("ampm") or chosen.group("ampm2"))
        if twelve_hour or _US_CUE.search(text):
            return None
    naive = datetime(date.year, date.month, date.day, hour, minute, second)
    if chosen is not None:
        # The rest of the time's line (a zone is not cut in half: "(UTC+01:00)"), at least
        # the next 40 characters.
        eol = masked.find("\n", chosen.end())
        eol = len(masked) if eol < 0 else eol
        zone_text = masked[chosen.end() : min(max(eol, chosen.end() + 40), chosen.end() + 100)]
        zone = _zone_from(zone_text, naive)
        if zone is None:
            zone = _bare_us_zone(zone_text, naive)
        if zone is None:
            zone = _zone_from(masked, naive)
    else:
        zone = _zone_from(masked[date.end : date.end + 40], naive)
    return naive.replace(tzinfo=zone) if zone is not None else naive
