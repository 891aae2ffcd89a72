"""Codes and identifiers: CPV codes (with their check digit), references, e-mail addresses."""

from __future__ import annotations

import re
from collections.abc import Sequence

from stages.extract_offline.concepts import labelled
from stages.extract_offline.labels import (
    _INLINE_REF,
    _NOT_CONTACT,
    _NOT_REFERENCE,
    _REF_LABELS,
    _REF_TOKEN,
    _TED_NUMBER,
)

_CPV = re.compile(r"(?<![\w-])((?:[0-9O] ?){7}[0-9O]) ?- ?([0-9O])(?![\w])")


_EMAIL = re.compile(
    r"(?<![\w.+-])([A-Za-z0-9][\w.+-]*) ?@ ?"
    r"([A-Za-z0-9-]+(?:(?:\.| \.|\. (?=[a-z]))[A-Za-z0-9-]+)+)"
)


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
    value = re.sub(r"^\s*(?:no\.?(?![a-z])|number|[:#])\s*", "", value, flags=re.I)
    ted = _TED_NUMBER.search(value)
    if ted and ted.start() < 3:
        return None  # an Official Journal publication number: the notice's, not the buyer's
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
            if not m or _NOT_REFERENCE.search(line[: m.end()]):
                continue
            value = m.group("value").strip()
            if not value:  # label above its value, perhaps with a blank line between
                value = next((ln for ln in lines[i + 1 : i + 3] if ln), "")
            ref = _reference_from(value)
            if ref:
                return ref
    for hit in labelled(lines, "reference"):  # "Ausschreibungsnummer", "Numéro du marché"
        ref = _reference_from(hit.value)
        if ref and not _NOT_REFERENCE.search(hit.label):
            return ref
    for line in lines:
        m = _INLINE_REF.search(line)
        if m and not _NOT_REFERENCE.search(line[: m.start()]):
            ref = _reference_from(m.group("value"))
            if ref:
                return ref
    return None


def _cpv_check_digit(stem: str) -> int:
    """CPV check digit: digits weighted 3, 7, 1, 3, 7, 1, 3, 7 from the left, summed, mod 10."""
    return sum(int(d) * w for d, w in zip(stem, (3, 7, 1, 3, 7, 1, 3, 7), strict=True)) % 10


_CPV_LABEL = re.compile(r"\bcpv\b", re.I)
# An 8-digit CPV stem printed without its check digit ("45214200", "45214200 - Works").
_CPV_BARE = re.compile(r"(?<![\w.,/-])([0-9]{8})(?![\w]|[.,/]\d| ?- ?\d(?![\d.,]))")
_CPV_LINE_START = re.compile(r"^\W{0,2}[0-9]{8}\b")


def _valid_stem(stem: str) -> bool:
    """CPV divisions run from 03 to 98; a stem of the same digit is a placeholder."""
    return 3 <= int(stem[:2]) <= 98 and len(set(stem)) > 1


def _cpv_codes(text: str) -> list[str]:
    """CPV codes in order of appearance, deduplicated, each with its check digit.

    A check digit that disagrees with its 8-digit stem is recomputed from the stem: the stem
    carries the meaning, and a wrong check digit is the likelier reading error to leave visible.
    A stem without a check digit counts only on a line that names CPV or in the run of code
    lines right under such a line: elsewhere 8 digits are as likely a phone or file number.
    """
    codes: list[str] = []

    def add(stem: str) -> None:
        code = f"{stem}-{_cpv_check_digit(stem)}"
        if _valid_stem(stem) and code not in codes:
            codes.append(code)

    in_run = False
    for line in text.split("\n"):
        label = _CPV_LABEL.search(line)
        if not line.strip():
            continue
        if not (label or _CPV_LINE_START.match(line)):
            in_run = False
        found: list[tuple[int, str]] = []
        for m in _CPV.finditer(line):
            raw = m.group(1).replace(" ", "")
            if sum(c.isdigit() for c in raw) >= 2:
                found.append((m.start(), raw.replace("O", "0")))
        if label or in_run:
            start = label.end() if label else 0
            found += [(m.start(), m.group(1)) for m in _CPV_BARE.finditer(line, start)]
        for _, stem in sorted(found):
            add(stem)
        if label:
            in_run = True
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


# The line after an address counts when it gives the organisation's role; any other line
# (the next field, a lot, a title) says nothing about the address.
_ROLE = re.compile(r"\b(?:roles?|r[ôo]les?|rolle)\b", re.I)

# Mailboxes that are never the contact for a tender, whatever the label says.
_NOT_CONTACT_LOCAL = re.compile(
    r"^(?:no-?reply|do-?not-?reply|support|helpdesk|help|assistance|webmaster|ted|info)\b", re.I
)


def _email(text: str, authority: str | None) -> str | None:
    """The first e-mail address whose surroundings do not make it someone else's.

    Notices print the portal's support desk, no-reply senders and the review body next to the
    buyer's contact: an address is skipped when its local part or its context (the text before
    it on its line, and the lines around a bare "E-mail:" line) names one of those.
    """
    lines = text.split("\n")
    for n, line in enumerate(lines):
        for m in _EMAIL.finditer(line):
            local, domain = m.group(1), re.sub(r"\s", "", m.group(2))
            domain = domain.rstrip(".-")
            if "." not in domain or _NOT_CONTACT_LOCAL.match(local):
                continue
            context = line[max(0, m.start() - 60) : m.start()]
            if len(context.strip()) < 12:  # "E-mail: x@y" or a bare address under its label
                near = [ln for ln in lines[max(0, n - 2) : n] if ln.strip()][-1:]
                # The line after counts when it describes this address ("Roles of this
                # organisation: Review organisation"), not when it is another address's.
                after = [ln for ln in lines[n + 1 : n + 4] if ln.strip()][:1]
                after = [ln for ln in after if "@" not in ln and _ROLE.search(ln)]
                context = " ".join([*near, context, *after])
            if _NOT_CONTACT.search(context):
                continue
            return f"{local.rstrip('.')}@{_spellfix_domain(domain, text, authority)}"
    return None
