"""Codes and identifiers: CPV codes (with their check digit), references, e-mail addresses."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pg_pipeline_documents.extract_offline.concepts import fold, labelled
from pg_pipeline_documents.extract_offline.labels import (
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
    if not re.search(r"\d", ref) or len(ref) < 3 or _NOT_AN_IDENTIFIER.fullmatch(ref):
        return None
    return ref


# What a reference label may be followed by that identifies nothing: a clause or section number
# ("3.2.1", "12.4"), a year, a date, a page count.
_NOT_AN_IDENTIFIER = re.compile(
    r"\d{1,2}(?:\.\d{1,2}){1,3}\.?|(?:19|20)\d\d|\d{1,3}"
    r"|\d{1,2}[./-]\d{1,2}[./-](?:\d{2}|\d{4})|(?:page|p)\.?\s*\d+",
    re.I,
)


def _reference(lines: Sequence[str]) -> str | None:
    for pattern in _REF_LABELS:
        for i, line in enumerate(lines):
            m = pattern.match(line)
            if not m or _NOT_REFERENCE.search(line[: m.end()]):
                continue
            value = m.group("value").strip()
            if not value or _NUMBER_LABEL.match(value):
                # The label above its value, perhaps with a blank line between, or the label
                # in a bilingual form's second language ("Solicitation No. - N° de
                # l'invitation") with the value below both.
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


# A number's label with no digit after it: "N° de l'invitation", "Numéro du marché".
_NUMBER_LABEL = re.compile(r"^(?:n[°º]|num[ée]ro|nummer|number|no\.)\s*[^\d]*$", re.I)

_CPV_LABEL = re.compile(r"\bc\.?p\.?v\b", re.I)
# An 8-digit CPV stem printed without its check digit ("45214200", "45214200 - Works").
_CPV_BARE = re.compile(r"(?<![\w.,/-])([0-9]{8})(?![\w]|[.,/]\d| ?- ?\d(?![\d.,]))")
# A line that opens with a code, whole or as OCR spaced it ("9091 1300-9").
_CPV_LINE_START = re.compile(r"^\W{0,2}(?:[0-9] ?){7}[0-9]\b")


def _unlabelled_code(line: str, m: re.Match[str], stem: str, digit: str) -> bool:
    """Whether a code with a check digit that no CPV label names is one: printed whole, its
    digit the usual formula's, on no telephone line ("Telefon: +49 5600 1234-0" has the shape)."""
    if " " in m.group(1) or not stem.isdigit() or int(digit) != _formula_check_digit(stem):
        return False
    return not _PHONE.search(line[: m.start()]) and not line[: m.start()].rstrip().endswith("+")


_PHONE = re.compile(
    r"\b(?:tel|t[ée]l[ée]phone|telefon|phone|fax|t[ée]l[ée]copieur|mobile?)\b", re.I
)


def _valid_stem(stem: str) -> bool:
    """CPV divisions run from 03 to 98; a stem of the same digit is a placeholder."""
    return 3 <= int(stem[:2]) <= 98 and len(set(stem)) > 1


def _formula_check_digit(stem: str) -> int:
    """The check digit most CPV codes carry: digits weighted 3, 7, 1, 3, 7, 1, 3, 7, summed,
    mod 10. About one official code in eighteen carries another, so this only confirms a
    printed digit, never supplies a missing one."""
    return sum(int(d) * w for d, w in zip(stem, (3, 7, 1, 3, 7, 1, 3, 7), strict=True)) % 10


def cpv_codes_in(text: str, *, labelled: bool = False) -> list[str]:
    """CPV codes in order of appearance, each as printed: with the check digit the document
    prints, or as the 8-digit stem when it prints none.

    No check digit is ever computed: the official list's digits follow no formula for about one
    code in eighteen (the publisher says so), so a computed digit would be wrong there. A stem
    printed elsewhere in the text with its digit is given that digit; a printed digit that the
    usual formula disagrees with (an exception, or a misread) leaves the stem alone.

    A bare stem counts only on a line that names CPV, in the run of code lines right under such
    a line, or anywhere when ``labelled`` (the caller read the text under a CPV label):
    elsewhere 8 digits are as likely a phone or file number.
    """
    found: list[tuple[str, str | None]] = []  # (stem, printed check digit)
    in_run = labelled
    under_label = False
    for line in text.split("\n"):
        label = _CPV_LABEL.search(line)
        if not line.strip():
            continue
        # "Code CPV principal" alone over "Descripteur principal : 45233140": the line under a
        # CPV heading with no code of its own holds the heading's code.
        heading_above, under_label = under_label, bool(label) and not re.search(r"\d", line)
        if not (label or labelled or heading_above or _CPV_LINE_START.match(line)):
            in_run = False
        hits: list[tuple[int, str, str | None]] = []
        named = bool(label) or in_run or heading_above
        for m in _CPV.finditer(line):
            raw = m.group(1).replace(" ", "")
            if sum(c.isdigit() for c in raw) >= 2:
                stem, digit = raw.replace("O", "0"), m.group(2).replace("O", "0")
                if not named and not _unlabelled_code(line, m, stem, digit):
                    continue
                hits.append((m.start(), stem, digit))
        if label or in_run or heading_above:
            start = label.end() if label else 0
            hits += [(m.start(), m.group(1), None) for m in _CPV_BARE.finditer(line, start)]
        found += [(stem, digit) for _, stem, digit in sorted(hits, key=lambda h: h[0])]
        if label:
            in_run = True
    # A printed digit the usual formula disagrees with is either one of the official list's
    # exceptions or a misread (OCR): the stem alone is sure, the digit is not.
    printed = {
        stem: digit
        for stem, digit in found
        if digit is not None and int(digit) == _formula_check_digit(stem)
    }
    codes: list[str] = []
    for stem, _digit in found:
        digit = printed.get(stem)
        code = stem if digit is None else f"{stem}-{digit}"
        if _valid_stem(stem) and code not in codes:
            codes.append(code)
    return codes


def _cpv_codes(text: str) -> list[str]:
    return cpv_codes_in(text)


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

# A line that is part of an address block (a street, a postcode, a phone number): the label
# above it says whose address it is.
_ADDRESS_BLOCK = re.compile(
    r"\b(?:t[ée]l|phone|telephone|fax|t[ée]l[ée]copieur)\b|\b\d{4,5}\s+[A-Z]", re.I
)

# Mailboxes that are never the contact for a tender, whatever the label says.
_NOT_CONTACT_LOCAL = re.compile(
    r"^(?:no-?reply|do-?not-?reply|support|helpdesk|help|assistance|webmaster|ted|info)\b"
    r"|(?:^|[._-])(?:no-?reply|support|helpdesk|help-?desk|webmaster)(?:$|[._-])",
    re.I,
)


def email_in(line: str) -> str | None:
    """The first e-mail address on a line, as a reader sees it."""
    m = _EMAIL.search(restore_missing_at(line))
    if m is None:
        return None
    domain = re.sub(r"\s", "", m.group(2)).rstrip(".-")
    return f"{m.group(1).rstrip('.')}@{domain}" if "." in domain else None


# A label that announces an e-mail address.
_EMAIL_LABEL = re.compile(
    r"\b(?:e-?mail(?:\s+address)?|courriel|adresse\s+(?:[ée]lectronique|e-?mail|mail)|m[ée]l"
    r"|e-?mail-adresse)\s*:\s*",
    re.I,
)
# What follows such a label when the "@" is drawn as a picture and the text layer lost it:
# "courriel : commande-publique ville-nimes.fr".
_MISSING_AT = re.compile(
    r"(?P<local>[A-Za-z0-9][\w.+-]*[\w])\s(?P<domain>[A-Za-z0-9][\w-]*(?:\.[\w-]+)*\.[A-Za-z]{2,12})"
    r"(?![\w@-])"
)


def restore_missing_at(line: str) -> str:
    """An address right after an e-mail label, printed with its "@" as an image (the text layer
    then holds a space): the reader sees the "@", so it is put back. Only there: elsewhere two
    words and a domain are just that."""
    if "@" in line or not _EMAIL_LABEL.search(line):
        return line

    out: list[str] = []
    pos = 0
    for label in _EMAIL_LABEL.finditer(line):
        m = _MISSING_AT.match(line, label.end())
        if m is None:
            continue
        out.append(line[pos : m.start()])
        out.append(f"{m.group('local')}@{m.group('domain')}")
        pos = m.end()
    out.append(line[pos:])
    return "".join(out)


def restore_missing_at_lines(lines: Sequence[str]) -> list[str]:
    """:func:`restore_missing_at` on each line, and on a line whose e-mail label ends the line
    above ("..., courriel :" / "Pascale.segala intradef.gouv.fr"): a wrapped value is still the
    label's, and its "@" was drawn as the same picture."""
    out: list[str] = []
    for line in lines:
        above = out[-1] if out else ""
        label = _EMAIL_LABEL_AT_END.search(above) if "@" not in line else None
        if label is not None:
            line = restore_missing_at(f"{label.group(0)}{line}")[len(label.group(0)) :]
        out.append(restore_missing_at(line))
    return out


# An e-mail label that ends its line, the address wrapped to the next one.
_EMAIL_LABEL_AT_END = re.compile(_EMAIL_LABEL.pattern + r"$", re.I)


def _email(text: str, authority: str | None) -> str | None:
    """The first e-mail address whose surroundings do not make it someone else's, one on the
    buyer's own domain before any other.

    Notices print the portal's support desk, no-reply senders and the review body next to the
    buyer's contact: an address is skipped when its local part or its context (the text before
    it on its line, and the lines around a bare "E-mail:" line) names one of those. A dossier
    also names its architect's or consultant's address, often first: where an address's
    domain carries a word of the buyer's name (or, the name unknown, of the document's first
    lines: its letterhead), that one is the buyer's contact.
    """
    found = _contact_addresses(text, authority)
    if not found:
        return None
    top = [ln for ln in text.split("\n") if ln.strip()][:_HEAD_LINES]
    # The letterhead's short lines, not the prose that may name the consultant.
    owner = authority or "\n".join(ln for ln in top if len(ln.split()) <= 8 and "@" not in ln)
    own = [address for address in found if _domain_of(address, owner)]
    return (own or found)[0]


#: Lines of a document's top read for its buyer's name when no rule found one.
_HEAD_LINES = 12
# Parts of a domain that name no one ("gov", "co", "uk", a mail provider's), and words of a
# header that any portal's domain may hold ("tenders", "procurement").
_GENERIC_DOMAIN_PARTS = frozenset(
    re.findall(
        r"\S+",
        "gov gouv govt gob com org net co ac edu int eu uk fr de at ch be nl lu es it ie us au ca "
        "nz in info mail email example gmail yahoo outlook hotmail web online tender tenders "
        "procurement services service portal contract contracts notice public group bids",
    )
)


def _domain_of(address: str, owner: str) -> bool:
    """Whether an address's domain holds a word of the owner's name ("northbridgeha" holds
    "northbridge"), or the owner's name holds the domain's word."""
    parts = re.split(r"[.-]", address.rsplit("@", 1)[-1].lower())
    parts = [p for p in parts if len(p) >= 4 and p not in _GENERIC_DOMAIN_PARTS]
    words = {w for w in re.findall(r"[a-z]{4,}", fold(owner)) if w not in _GENERIC_DOMAIN_PARTS}
    return any(w in p or p in w for p in parts for w in words)


def _contact_addresses(text: str, authority: str | None) -> list[str]:
    """The addresses, in order, that are not someone else's by their surroundings."""
    out: list[str] = []
    lines = text.split("\n")
    for n, line in enumerate(lines):
        for m in _EMAIL.finditer(line):
            local, domain = m.group(1), re.sub(r"\s", "", m.group(2))
            domain = domain.rstrip(".-")
            if "." not in domain or _NOT_CONTACT_LOCAL.search(local):
                continue
            context = line[max(0, m.start() - 60) : m.start()]
            if len(context.strip()) < 12:  # "E-mail: x@y" or a bare address under its label
                near = [ln for ln in lines[max(0, n - 2) : n] if ln.strip()][-1:]
            else:
                # An address line under the label that says whose it is: "Adresse auprès de
                # laquelle des renseignements d'ordre technique ..." / "150, rue ..., courriel
                # : x". The label counts unless another address stands between.
                above = [ln for ln in lines[max(0, n - 2) : n] if ln.strip()][-1:]
                near = [ln for ln in above if "@" not in ln and _ADDRESS_BLOCK.search(line)]
            # The line after counts when it describes this address ("Roles of this
            # organisation: Review organisation"), not when it is another address's.
            after = [ln for ln in lines[n + 1 : n + 4] if ln.strip()][:1]
            after = [ln for ln in after if "@" not in ln and _ROLE.search(ln)]
            context = " ".join([*near, context, *after])
            if _NOT_CONTACT.search(context):
                continue
            address = f"{local.rstrip('.')}@{_spellfix_domain(domain, text, authority)}"
            if address not in out:
                out.append(address)
            if len(out) == _MAX_ADDRESSES:
                return out
    return out


#: Addresses compared at most (a directory of mailboxes is no notice, and the work stays small).
_MAX_ADDRESSES = 20
