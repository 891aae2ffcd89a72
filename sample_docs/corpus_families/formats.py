"""The date and amount formats the wording pools draw from, by name (corpus_wording.py names
them per pool and language)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from decimal import Decimal

from .values import EN_MONTHS, FR_MONTHS, WEEKDAYS, de_amount, en_amount, ordinal, spaced_amount

DE_MONTHS = [
    "Januar",
    "Februar",
    "März",
    "April",
    "Mai",
    "Juni",
    "Juli",
    "August",
    "September",
    "Oktober",
    "November",
    "Dezember",
]
DE_WEEKDAYS = ["Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"]
FR_WEEKDAYS = ["lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"]


#: Month names as US newspapers abbreviate them (AP style).
AP_MONTHS = [
    "Jan.",
    "Feb.",
    "March",
    "April",
    "May",
    "June",
    "July",
    "Aug.",
    "Sept.",
    "Oct.",
    "Nov.",
    "Dec.",
]
FR_MONTHS_ABBR = [
    "janv.",
    "févr.",
    "mars",
    "avr.",
    "mai",
    "juin",
    "juil.",
    "août",
    "sept.",
    "oct.",
    "nov.",
    "déc.",
]


def _h12(d: datetime) -> tuple[int, str]:
    return (d.hour % 12 or 12), ("p.m." if d.hour >= 12 else "a.m.")


DATE_FORMATS: dict[str, Callable[[datetime], str]] = {
    # seen
    "dmy_slash": lambda d: d.strftime("%d/%m/%Y %H:%M"),
    "d_month_y_at": lambda d: f"{d.day} {EN_MONTHS[d.month - 1]} {d.year} at {d:%H:%M}",
    "hm_on_weekday": lambda d: (
        f"{d:%H:%M} on {WEEKDAYS[d.weekday()]} {ordinal(d.day)} {EN_MONTHS[d.month - 1]} {d.year}"
    ),
    "month_d_y_pm": lambda d: (
        f"{EN_MONTHS[d.month - 1]} {d.day}, {d.year} at {_h12(d)[0]}:{d:%M} {_h12(d)[1]}"
    ),
    "two_lines": lambda d: f"Date: {d:%d/%m/%Y}\nLocal time: {d:%H:%M}",
    "iso": lambda d: d.strftime("%Y-%m-%d %H:%M"),
    "de_dots": lambda d: d.strftime("%d.%m.%Y, %H:%M Uhr"),
    "de_um": lambda d: d.strftime("%d.%m.%Y um %H:%M Uhr"),
    "de_month": lambda d: f"{d.day}. {DE_MONTHS[d.month - 1]} {d.year}, {d:%H:%M} Uhr",
    "fr_month": lambda d: f"{d.day} {FR_MONTHS[d.month - 1]} {d.year} à {d.hour}h{d:%M}",
    "fr_slash": lambda d: d.strftime("%d/%m/%Y à %H:%M"),
    "fr_le_jour": lambda d: (
        f"le {FR_WEEKDAYS[d.weekday()]} {d.day} {FR_MONTHS[d.month - 1]} {d.year} à {d.hour}h{d:%M}"
    ),
    # held out
    "d_mon_y_hrs": lambda d: f"{d.day}-{EN_MONTHS[d.month - 1][:3]}-{d.year} {d:%H:%M} hrs",
    "weekday_dot_pm": lambda d: (
        f"{WEEKDAYS[d.weekday()]}, {d.day} {EN_MONTHS[d.month - 1]} {d.year}, "
        f"{_h12(d)[0]}.{d:%M}{_h12(d)[1].replace('.', '')}"
    ),
    "iso_t": lambda d: d.strftime("%Y-%m-%dT%H:%M:00"),
    "no_later_than": lambda d: (
        f"no later than {_h12(d)[0]}:{d:%M} {_h12(d)[1].replace('.', '').upper()} on "
        f"{EN_MONTHS[d.month - 1]} {d.day}, {d.year}"
    ),
    "de_dots_dot": lambda d: d.strftime("%d.%m.%Y, %H.%M Uhr"),
    "de_weekday": lambda d: f"{DE_WEEKDAYS[d.weekday()]}, {d:%d.%m.%Y}, {d:%H:%M} Uhr",
    "de_bis": lambda d: d.strftime("bis %d.%m.%Y %H:%M Uhr"),
    "fr_slash_dash": lambda d: d.strftime("%d/%m/%Y - %Hh%M"),
    "fr_heures": lambda d: (
        f"{d.day} {FR_MONTHS[d.month - 1]} {d.year}, {d.hour} heures"
        + (f" {d.minute}" if d.minute else "")
    ),
    "fr_jour_colon": lambda d: (
        f"{FR_WEEKDAYS[d.weekday()]} {d.day} {FR_MONTHS[d.month - 1]} {d.year} à {d:%H:%M}"
    ),
    # the third pool
    "us_weekday_long": lambda d: (
        f"{WEEKDAYS[d.weekday()]}, {EN_MONTHS[d.month - 1]} {d.day}, {d.year} at "
        f"{_h12(d)[0]}:{d:%M} {_h12(d)[1].replace('.', '').upper()}"
    ),
    "dmy_dash_24h": lambda d: d.strftime("%d-%m-%Y %H:%M"),
    "ordinal_day_of": lambda d: (
        f"{d:%H:%M} hours on the {ordinal(d.day)} day of {EN_MONTHS[d.month - 1]} {d.year}"
    ),
    "time_first_comma": lambda d: f"{d:%H:%M}, {d.day} {EN_MONTHS[d.month - 1]} {d.year}",
    "de_long_weekday": lambda d: (
        f"{DE_WEEKDAYS[d.weekday()]}, {d.day}. {DE_MONTHS[d.month - 1]} {d.year}, {d:%H:%M} Uhr"
    ),
    "de_uhr_only": lambda d: f"{d:%d.%m.%Y}, {d.hour} Uhr",
    "de_iso": lambda d: d.strftime("%Y-%m-%d, %H:%M Uhr"),
    "fr_jour_h": lambda d: f"{d.day} {FR_MONTHS[d.month - 1]} {d.year} à {d.hour} h {d:%M}",
    "fr_dmy_h": lambda d: f"{d:%d/%m/%Y} à {d.hour}h",
    "fr_le_dmy": lambda d: f"le {d:%d/%m/%Y} à {d:%H:%M}",
    # the fourth pool
    "d_month_y_comma_hm": lambda d: f"{d.day} {EN_MONTHS[d.month - 1]} {d.year}, {d:%H:%M}",
    "month_d_y_24": lambda d: f"{EN_MONTHS[d.month - 1]} {d.day}, {d.year} {d:%H:%M}",
    "dmy_dots_at": lambda d: d.strftime("%d.%m.%Y at %H:%M"),
    "de_month_um": lambda d: f"{d.day}. {DE_MONTHS[d.month - 1]} {d.year} um {d:%H:%M} Uhr",
    "de_time_first": lambda d: d.strftime("%H:%M Uhr, %d.%m.%Y"),
    "de_slash_year": lambda d: d.strftime("%d.%m.%Y / %H:%M Uhr"),
    "fr_le_month_h": lambda d: f"le {d.day} {FR_MONTHS[d.month - 1]} {d.year} à {d.hour}h{d:%M}",
    "fr_iso_h": lambda d: f"{d:%Y-%m-%d} à {d.hour}h{d:%M}",
    "fr_dots_heures": lambda d: f"{d:%d.%m.%Y} à {d.hour} heures",
    # the fifth pool
    "d_mon_y_comma": lambda d: f"{d.day} {EN_MONTHS[d.month - 1][:3]} {d.year}, {d:%H:%M}",
    "us_slash_pm": lambda d: f"{d:%m/%d/%Y} {_h12(d)[0]}:{d:%M} {_h12(d)[1]}",
    "de_dots_h": lambda d: d.strftime("%d.%m.%Y, %H.%M h"),
    "de_month_komma": lambda d: f"{d.day}. {DE_MONTHS[d.month - 1]} {d.year}, {d:%H:%M} Uhr",
    "fr_month_virgule": lambda d: f"{d.day} {FR_MONTHS[d.month - 1]} {d.year}, {d:%H:%M}",
    "fr_slash_h": lambda d: f"{d:%d/%m/%Y}, {d.hour} h {d:%M}",
    # the sixth pool
    "d_month_y_hm_plain": lambda d: f"{d.day} {EN_MONTHS[d.month - 1]} {d.year} {d:%H:%M}",
    "weekday_d_month_at": lambda d: (
        f"{WEEKDAYS[d.weekday()]} {d.day} {EN_MONTHS[d.month - 1]} {d.year} at {d:%H:%M}"
    ),
    "de_dots_komma_uhr": lambda d: d.strftime("%d.%m.%Y, %H:%M Uhr"),
    "de_weekday_month": lambda d: (
        f"{DE_WEEKDAYS[d.weekday()]}, den {d.day}. {DE_MONTHS[d.month - 1]} {d.year}, {d:%H:%M} Uhr"
    ),
    "fr_dmy_a_h": lambda d: f"{d:%d/%m/%Y} à {d.hour} h {d:%M}",
    "fr_weekday_month_h": lambda d: (
        f"{FR_WEEKDAYS[d.weekday()]} {d.day} {FR_MONTHS[d.month - 1]} {d.year} à {d.hour}h{d:%M}"
    ),
    # the seventh pool
    "ordinal_at_pm": lambda d: (
        f"{ordinal(d.day)} {EN_MONTHS[d.month - 1]} {d.year} at "
        f"{_h12(d)[0]}:{d:%M}{_h12(d)[1].replace('.', '')}"
    ),
    "ap_style": lambda d: (
        f"{WEEKDAYS[d.weekday()][:3]}., {AP_MONTHS[d.month - 1]} {d.day}, {d.year}, "
        f"{_h12(d)[0]}:{d:%M} {_h12(d)[1].replace('.', '').upper()}"
    ),
    "dmy_dots_hrs": lambda d: d.strftime("%d.%m.%Y %H:%M hrs"),
    "de_two_digit_year": lambda d: d.strftime("%d.%m.%y, %H:%M Uhr"),
    "de_abbr_weekday": lambda d: f"{DE_WEEKDAYS[d.weekday()][:2]}., {d:%d.%m.%Y %H:%M} Uhr",
    "de_paren_uhr": lambda d: d.strftime("%d.%m.%Y (%H:%M Uhr)"),
    "fr_dmy_dash_h": lambda d: f"{d:%d-%m-%Y} {d.hour}h{d:%M}",
    "fr_month_abbr": lambda d: f"{d.day} {FR_MONTHS_ABBR[d.month - 1]} {d.year} à {d:%H:%M}",
    "fr_time_first": lambda d: f"{d.hour}h{d:%M}, le {d:%d/%m/%Y}",
}
#: Formats that print the hour only: a deadline in them falls on the full hour.
WHOLE_HOUR_DATES = ("fr_heures", "de_uhr_only", "fr_dmy_h", "fr_dots_heures")

SYMBOL = {"EUR": "€", "GBP": "£", "USD": "$"}
NBSP = "\u00a0"


def _short(v: Decimal, dec: str = ".") -> str:
    """1250000 as "1.25" (millions), for "EUR 1.25 million"."""
    return f"{(v / 1_000_000).normalize():f}".replace(".", dec)


AMOUNT_FORMATS: dict[str, Callable[[Decimal, str], str]] = {
    # seen
    "code_pre": lambda v, c: f"{c} {en_amount(v)}",
    "symbol_pre": lambda v, c: f"{SYMBOL[c]}{en_amount(v, False)}",
    "code_post": lambda v, c: f"{en_amount(v)} {c}",
    "million": lambda v, c: f"{c} {_short(v)} million",
    "thousand_k": lambda v, c: f"{SYMBOL[c]}{v / 1000:.0f}k excl. VAT",
    "de_code_post": lambda v, c: f"{de_amount(v)} EUR",
    "de_euro_netto": lambda v, c: f"{de_amount(v)} € netto",
    "de_code_pre": lambda v, c: f"EUR {de_amount(v)}",
    "de_mio": lambda v, c: f"{_short(v, ',')} Mio. EUR",
    "fr_euro_ht": lambda v, c: f"{spaced_amount(v)} € HT",
    "fr_euros_ht": lambda v, c: f"{spaced_amount(v).removesuffix(',00')} euros HT",
    "fr_million": lambda v, c: f"{_short(v, ',')} million d'euros HT",
    # held out
    "spaced_code": lambda v, c: f"{c} {spaced_amount(v, '.').removesuffix('.00')}",
    "million_words": lambda v, c: (
        f"{_short(v)} million {dict(EUR='euros', GBP='pounds', USD='dollars')[c]}"
    ),
    "code_m": lambda v, c: f"{c} {_short(v)}m",
    "de_euro_ohne": lambda v, c: f"{de_amount(v).removesuffix(',00')} Euro (ohne MwSt.)",
    "de_ca_mio": lambda v, c: f"ca. {_short(v, ',')} Mio. €",
    "de_spaced": lambda v, c: f"{spaced_amount(v)} EUR netto",
    "fr_dots_code": lambda v, c: f"{de_amount(v)} EUR HT",
    "fr_hors_taxes": lambda v, c: f"{spaced_amount(v)} euros hors taxes",
    "fr_m_euro": lambda v, c: f"{_short(v, ',')} M€ HT",
    # the third pool
    "symbol_dec_exvat": lambda v, c: f"{SYMBOL[c]}{en_amount(v)} (excluding VAT)",
    "approx_m": lambda v, c: f"approximately {SYMBOL[c]}{_short(v)}m",
    "code_thousand": lambda v, c: f"{c} {v / 1000:,.0f} thousand",
    "de_tsd": lambda v, c: f"{de_amount(v / 1000).removesuffix(',00')} Tsd. EUR",
    "de_euro_word": lambda v, c: f"{de_amount(v)} Euro netto",
    "de_zzgl_ust": lambda v, c: f"EUR {de_amount(v)} zzgl. USt.",
    "de_millionen": lambda v, c: f"{_short(v, ',')} Millionen Euro netto",
    "fr_ht_dotted": lambda v, c: f"{spaced_amount(v)} EUR H.T.",
    "fr_k_euro": lambda v, c: f"{v / 1000:.0f} k€ HT",
    "fr_millions_hors_tva": lambda v, c: f"{_short(v, ',')} millions d'euros hors TVA",
    # the fourth pool
    "plain_post": lambda v, c: f"{v:.2f} {c}",
    "symbol_m_words": lambda v, c: f"{SYMBOL[c]}{_short(v)} million",
    "code_excl": lambda v, c: f"{c} {en_amount(v)} excluding VAT",
    "de_eur_code_netto": lambda v, c: f"EUR {de_amount(v)} netto",
    "de_plain_post": lambda v, c: f"{v:.2f} EUR".replace(".", ","),
    "de_euro_sign_netto": lambda v, c: f"{de_amount(v)} € (netto)",
    "fr_code_pre_ht": lambda v, c: f"EUR {spaced_amount(v)} HT",
    "fr_plain_ht": lambda v, c: f"{v:.2f} € HT".replace(".", ","),
    "fr_euros_hors_tva": lambda v, c: f"{spaced_amount(v)} euros hors TVA",
    # the fifth pool
    "code_pre_nodec": lambda v, c: f"{c} {en_amount(v, False)}",
    "symbol_excl": lambda v, c: f"{SYMBOL[c]}{en_amount(v)} excl. VAT",
    "de_code_pre_netto": lambda v, c: f"EUR {de_amount(v)} (netto)",
    "de_euro_word_pre": lambda v, c: f"Euro {de_amount(v)}",
    "fr_euro_word_ht": lambda v, c: f"{spaced_amount(v)} euros H.T.",
    "fr_code_post_ht": lambda v, c: f"{de_amount(v)} EUR (HT)",
    # the sixth pool
    "code_pre_excl": lambda v, c: f"{c} {en_amount(v)} (excl. VAT)",
    "symbol_plain": lambda v, c: f"{SYMBOL[c]}{en_amount(v)}",
    "de_code_post_netto": lambda v, c: f"{de_amount(v)} EUR (netto)",
    "de_euro_ohne_ust": lambda v, c: f"{de_amount(v)} Euro ohne USt.",
    "fr_code_post_hors_taxes": lambda v, c: f"{spaced_amount(v)} EUR hors taxes",
    "fr_euro_ht_plain": lambda v, c: f"{spaced_amount(v)} € HT",
    # the seventh pool
    "net_of_vat": lambda v, c: f"{c} {en_amount(v)} net of VAT",
    "symbol_code_post": lambda v, c: f"{SYMBOL[c]}{en_amount(v)} {c}",
    "symbol_m_ex": lambda v, c: f"{SYMBOL[c]}{_short(v)} million (ex VAT)",
    "de_symbol_pre": lambda v, c: f"€ {de_amount(v)} netto",
    "de_zzgl_mwst": lambda v, c: f"{de_amount(v)} EUR zzgl. MwSt.",
    "de_teur": lambda v, c: f"{de_amount(v / 1000).removesuffix(',00')} TEUR",
    "fr_nbsp": lambda v, c: f"{spaced_amount(v)} € HT".replace(" ", NBSP),
    "fr_htva": lambda v, c: f"{spaced_amount(v)} € HTVA",
    "fr_code_pre_hors_tva": lambda v, c: f"EUR {spaced_amount(v)} hors TVA",
}
#: Formats that print the value rounded: the value must then be a multiple of this.
AMOUNT_UNITS = {
    "million": 10_000,
    "fr_million": 10_000,
    "de_mio": 10_000,
    "million_words": 10_000,
    "code_m": 10_000,
    "de_ca_mio": 10_000,
    "fr_m_euro": 10_000,
    "thousand_k": 1000,
    "symbol_pre": 1,
    "fr_euros_ht": 1,
    "spaced_code": 1,
    "de_euro_ohne": 1,
    "approx_m": 10_000,
    "de_millionen": 10_000,
    "fr_millions_hors_tva": 10_000,
    "code_thousand": 1000,
    "de_tsd": 1000,
    "fr_k_euro": 1000,
    "symbol_m_words": 10_000,
    "code_pre_nodec": 1,
    "symbol_m_ex": 10_000,
    "de_teur": 1000,
}
