"""Amounts and currencies: number formats, currency codes, symbols and words."""
# ruff: noqa: RUF001  (Cyrillic words are data here, not look-alikes)

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from pg_pipeline_documents.extract_offline.labels import _DEADLINE_GENERIC, _LOT_HEADER
from pg_pipeline_documents.extract_offline.normalise import _fix_digit_o

# Codes that are also English words in capitals (ALL, TRY, MAD, SAR) are left out on purpose.
_ISO_CURRENCIES = frozenset(
    {"EUR", "GBP", "USD", "CHF", "SEK", "NOK", "DKK", "ISK", "PLN", "CZK", "HUF", "RON", "BGN"}
    | {"HRK", "RSD", "MKD", "BAM", "MDL", "UAH", "CAD", "AUD", "NZD", "JPY", "CNY", "INR", "ZAR"}
    | {"SGD", "HKD", "AED", "QAR", "KES", "NGN", "GHS", "EGP", "BRL", "MXN"}
    | {"KZT", "RUB", "BYN", "UZS", "GEL", "AMD", "AZN"}
)


_SYMBOLS = {
    **{"€": "EUR", "£": "GBP", "US$": "USD", "$": "USD", "₹": "INR"},
    **{"₸": "KZT", "₽": "RUB", "₴": "UAH"},
}


_WORD_CURRENCIES = {
    "euro": "EUR",
    "euros": "EUR",
    "d'euros": "EUR",
    "pounds sterling": "GBP",
    "pound sterling": "GBP",
    "sterling": "GBP",
    "pounds": "GBP",
    "us dollars": "USD",
    "dollars": "USD",
    "swiss francs": "CHF",
    "rs": "INR",
    "rs.": "INR",
    "rupees": "INR",
    "тенге": "KZT",
    "руб": "RUB",
    "руб.": "RUB",
    "рублей": "RUB",
    "грн": "UAH",
    "грн.": "UAH",
    "гривень": "UAH",
    "лв": "BGN",
    "лв.": "BGN",
    "лева": "BGN",
}


_CUR = (
    r"(?:US\$|[€£$₹₸₽₴]|\b(?:" + "|".join(sorted(_ISO_CURRENCIES)) + r")\b|\bRs\.?(?=\s?\d)"
    r"|(?:\bd')?\b(?:euros?|pounds? sterling|sterling|pounds|(?:us )?dollars|swiss francs"
    r"|rupees|тенге|рублей|руб\.?|гривень|грн\.?|лева|лв\.?)(?!\w))"
)


_NUM = (
    r"(?<![\d.,])(?:\d{1,2}(?:,\d\d)+,\d{3}(?:\.\d{1,2})?"  # Indian grouping: 5,00,000
    r"|\d{1,3}(?:(?:[,.'](?: )?| )\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?)"
    r"(?![\d])"
)


_MULT = r"(?:(?:millionen|millions?|mio|mln|mn|m|billion|bn|thousand|tausend|tsd|k)\b\.?)"


_AMOUNT = re.compile(
    r"(?P<pre>" + _CUR + r")?\s?(?P<num>" + _NUM + r")(?:\s?(?P<mult>" + _MULT + r"))?"
    r"(?:\s?(?P<post>" + _CUR + r"))?(?P<pct>\s?%)?",
    re.I,
)


_CURRENCY_LABEL = re.compile(r"\b(?i:currency)\s*[:|]?\s*(?P<code>[A-Z]{3})\b")


_MULTIPLIERS = {
    "million": Decimal(1_000_000),
    "millions": Decimal(1_000_000),
    "mio": Decimal(1_000_000),
    "mln": Decimal(1_000_000),
    "mn": Decimal(1_000_000),
    "m": Decimal(1_000_000),
    "billion": Decimal(1_000_000_000),
    "bn": Decimal(1_000_000_000),
    "millionen": Decimal(1_000_000),
    "thousand": Decimal(1000),
    "tausend": Decimal(1000),
    "tsd": Decimal(1000),
    "k": Decimal(1000),
}
#: Multipliers after which a group of three digits is a thousands group, not decimals: "EUR
#: 2,291 thousand" is 2,291,000 (thousands are not written with three decimals), while "1,250
#: Mio." is 1.25 million.
_THOUSANDS = frozenset({"thousand", "tausend", "tsd", "k"})


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
    if re.fullmatch(r"\d{1,2}(?:,\d\d)+,\d{3}(?:\.\d{1,2})?", s):
        return Decimal(s.replace(",", ""))  # lakh and crore groups
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


# Words that cite a rule by its number: the number after them is no amount.
_CITED = re.compile(
    r"(?:\b(?:FAR|DFARS|art(?:icle)?s?\.?|sections?|clauses?|paragraphs?|para\.?|rule|"
    r"regulations?|chapter|annex|appendix)|§)\s*$",
    re.I,
)


# What follows a clause's number ("8.405-3(a)", "12.3.4"), never an amount's.
_CLAUSE_TAIL = re.compile(r"-\d|\(\w\)|\.\d")


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
        grouping_mult = mult is not None and mult.lower().rstrip(".") not in _THOUSANDS
        value = _parse_number(num, has_mult=grouping_mult)
        if value is None:
            continue
        grouped = bool(re.search(r"\d[,.' ]\d{3}(?!\d)", num))
        if currency is None and _CITED.search(text[max(0, m.start() - 12) : m.start()]):
            continue  # "FAR 8.405-3", "article R2122-7", "§ 1.234": a rule's number
        if currency is None and _CLAUSE_TAIL.match(text, m.end()):
            continue  # "8.405-3(a)": a clause number, not an amount
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


def _join_split_groups(text: str) -> str:
    """OCR's stray space before a thousands separator: ``$1 ,356,000.00`` is $1,356,000.00."""
    return re.sub(r"(?<=\d) (?=[,.]\d{3}(?:\D|$))", "", text)


def _value_window(lines: Sequence[str], i: int, start: int) -> tuple[str, str]:
    """The value text after a label (this line or the next two) and a wider text for currency."""
    main = _join_split_groups(_fix_digit_o(lines[i][start:]))
    extra: list[str] = []
    for j in range(i + 1, min(i + 3, len(lines))):
        if _LOT_HEADER.match(lines[j]) or _DEADLINE_GENERIC.search(lines[j]):
            break
        extra.append(_join_split_groups(_fix_digit_o(lines[j])))
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
                r"[\s:|]*(?:\(?(?:excl\w*\.?\s+VAT|excluding\s+VAT|net|netto|hors\s+TVA|HT|"
                r"ohne\s+MwSt\.?|zzgl\.?\s+MwSt\.?)\)?)?[\s:|]*",
                rest,
                re.I,
            ):
                return None
        found = _amounts(wide)
        if not found:
            return None
    # An amount with its currency beats a bare number; a bare number counts only as the value
    # itself, printed right after its label, not inside the sentence that follows it.
    money = [a for a in found if a.currency is not None]
    if money:
        amount = money[0]
    elif found[0].start <= _BARE_VALUE_REACH or not main.strip():
        amount = found[0]
    else:
        return None
    source = main if _amounts(main) else wide
    if _GROSS_AFTER.match(source, amount.end):
        return None  # "$1,200,000 (GST inclusive)": a gross sum, not the estimate without tax
    currency = amount.currency
    if currency is None:
        cm = _CURRENCY_LABEL.search(wide) or re.search(r"\((?P<code>[A-Z]{3})\)", lines[i])
        if cm and cm.group("code") in _ISO_CURRENCIES:
            currency = cm.group("code")
        else:
            near = [a.currency for a in _amounts(wide) if a.currency]
            currency = near[0] if near else fallback_currency
    return amount.value, currency


# What says, right after an amount on its line, that it includes the tax: the estimate is
# without it.
_GROSS_AFTER = re.compile(
    r"[ \t]*[(,]?[ \t]*(?:(?:GST|VAT|HST|taxes|tax|MwSt\.?|USt\.?|TVA)\s+incl(?:usive|uded|\.)?"
    r"|incl(?:usive|uding|\.)?\s+(?:of\s+)?(?:GST|VAT|HST|taxes|tax|MwSt|USt|TVA|all\s+taxes)"
    r"|TTC|brutto|gross)\b",
    re.I,
)


#: How far after its label a number without a currency may start and still be the value.
_BARE_VALUE_REACH = 30


def _label_part(line: str, end: int) -> str:
    """A value line up to its first digit: the words that say what the amount is."""
    digit = re.search(r"\d", line[end:])
    return line if digit is None else line[: end + digit.start()]


#: How much of a document is read for the currency it uses.
_CURRENCY_SCAN_CHARS = 200_000


def local_dollar(currency: str | None, text: str) -> str | None:
    """The dollar a document's bare "$" stands for: U.S. dollars unless the document names
    another dollar's country or code and none of the United States'; None when it names both,
    or only a goods and services tax (which dollar "$" means is then a guess)."""
    if currency != "USD":
        return currency
    head = text[:_CURRENCY_SCAN_CHARS]
    if re.search(r"US\$|\bUSD\b", head):
        return "USD"  # printed as U.S. dollars, not read from a bare "$"
    others = {code for code, cue in _OTHER_DOLLARS.items() if cue.search(head)}
    if not others:
        # A goods and services tax is levied where the dollar is not the U.S. one.
        return None if _GST.search(head) else "USD"
    if len(others) > 1 or _US_CUE.search(head):
        return None
    return others.pop()


# Where a "$" is some other country's dollar: its code, its own symbol, its country's name.
_OTHER_DOLLARS = {
    "AUD": re.compile(r"\bAUD\b|\bAU?\$|\bAustralia(?:n)?\b"),
    "CAD": re.compile(r"\bCAD\b|\bCA?\$|\bCanad(?:a|ian)\b"),
    "NZD": re.compile(r"\bNZD\b|\bNZ\$|\bNew Zealand\b"),
    "SGD": re.compile(r"\bSGD\b|\bS\$|\bSingapore\b"),
    "HKD": re.compile(r"\bHKD\b|\bHK\$|\bHong Kong\b"),
}
_US_CUE = re.compile(r"\bU\.\s?S\.(?:\s?A\.)?|\bUnited States\b|\bUSA\b")
_GST = re.compile(r"\b(?:GST|HST)\b")


def _document_currency(text: str) -> str | None:
    """The currency when the whole notice only ever mentions one."""
    # The notice's first pages say it if anything does; the work stays bounded on long input.
    text = text[:_CURRENCY_SCAN_CHARS]
    seen = {a.currency for a in _amounts(_fix_digit_o(text)) if a.currency}
    for m in _CURRENCY_LABEL.finditer(text):
        if m.group("code") in _ISO_CURRENCIES:
            seen.add(m.group("code"))
    return seen.pop() if len(seen) == 1 else None
