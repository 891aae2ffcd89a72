"""What a document says of itself in its sentences, when no label names a field.

A tender dossier without a notice form still states who buys and what, in sentences its genre
repeats: "Sealed tenders are invited by the Port Authority for the dredging of ...", "for and on
behalf of the Port Authority", "... between the Port Authority (the Employer) and ...",
'"PA" shall mean the Port Authority'. One such sentence may name an agent, a signatory or a
party of a sample contract, so a buyer is believed only when two statements of different kinds
name it; a title only from the invitation itself, which says what the tenders are for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pg_pipeline_documents.extract_offline.evidence import _Ev, _Result
from pg_pipeline_documents.extract_offline.normalise import _clean_text_value

#: Lines read for statements at most: a dossier states its parties in its first pages and its
#: contract forms; the work stays bounded on long input.
MAX_LINES = 4000

# A name as printed in running text: capitalised words (or words in capitals), with the small
# words that join a body's name ("Bank of India", "Ministry of Health and Family Welfare"). The
# patterns around it are case-blind; the name is not, so that it ends where lower case begins.
_JOINERS = r"of|and|&|de|du|des|la|le|der|für"
_NAME = (
    r"(?P<name>(?:(?i:the)\s+)?[A-Z][\w&'.]*(?:\s+(?:(?:" + _JOINERS + r")\s+)?"
    r"[A-Z][\w&'.]*){1,9})"
)

_INVITED_BY = re.compile(
    r"(?i:\b(?:tenders?|bids?|quotations?|proposals?|offers?|applications?)\b[^.;:]{0,60}?"
    r"\b(?:are|is)\s+(?:hereby\s+)?invited\s+by)\s+" + _NAME
)
_ON_BEHALF = re.compile(r"(?i:\bon\s+behalf\s+of)\s+" + _NAME)
# "The Ministry of Health invites sealed bids", "This RFQ is issued by the Port Authority".
_INVITES = re.compile(
    _NAME + r"\s+(?i:(?:hereby\s+)?invites\s+(?:sealed\s+|online\s+|electronic\s+|e-)?"
    r"(?:tenders|bids|quotations|proposals|offers|applications))\b"
)
_ISSUED_BY = re.compile(r"(?i:\b(?:is|are|was|were|being)\s+issued\s+by)\s+" + _NAME)
# "between BANK OF INDIA (client) and", "the Port Authority (hereinafter called the Employer)".
_PARTY = re.compile(
    _NAME + r"\s*\((?i:(?:hereinafter\s+(?:called|referred\s+to\s+as)\s+)?(?:the\s+)?"
    r"[\"'\u201c\u2018]?(?:client|employer|purchaser|buyer|owner|contracting\s+authority)"
    r"[\"'\u201d\u2019]?)\)"
    # ... or without brackets: 'the Port Authority, hereinafter referred to as the "Employer"'.
    r"|" + _NAME.replace("?P<name>", "?P<name2>") + r",?\s+(?i:hereinafter\s+(?:called|referred"
    r"\s+to\s+as|known\s+as)\s+(?:the\s+)?[\"'\u201c\u2018]?(?:client|employer|purchaser|"
    r"buyer|owner|authority|contracting\s+authority|procuring\s+entity))\b"
)
# '"BOI" shall mean Bank of India': a short name defined as the body's.
_DEFINED = re.compile(
    r"[\"'\u201c\u2018](?P<short>[A-Z]{2,8})[\"'\u201d\u2019]\s+"
    r"(?i:shall\s+mean|means|refers\s+to)\s+" + _NAME
)

# The words a statement uses for a party that is not the buyer: whoever answers the tender,
# or acts for one ("M/s", an agent, an architect's firm). Not "Agency" or "Engineers": public
# bodies are called so ("Environment Agency", "Corps of Engineers").
_ROLE = re.compile(
    r"\b(?:tenderers?|bidders?|contractors?|suppliers?|consultants?|compan(?:y|ies)|firms?|"
    r"applicants?|vendors?|offerors?|proposers?|undersigned|service\s+providers?|"
    r"agents?|architects?|M/s)\b",
    re.I,
)

_TENDER_WORD = r"\b(?:tenders?|bids?|quotations?|proposals?|offers?)\b"
_INVITED_FOR = re.compile(
    # The subject nearest to "invited": "NOTICE INVITING TENDER / Sealed tenders are invited".
    _TENDER_WORD + r"(?:(?!" + _TENDER_WORD + r")[^.;:]){0,40}?"
    r"\b(?:are|is)\s+(?:hereby\s+)?invited\b(?P<who>[^.;:]{0,120}?)\s+for\s+"
    # "invited for and on behalf of the President of India for <what>": the next "for".
    r"(?!(?:and\s+)?on\s+behalf\b)(?:the\s+)?"
    r"(?P<what>[^.;:]{8,220}?)(?:\.(?:\s|$)|;|:|$)",
    re.I,
)
# Where the name of the purchase ends and the sentence goes on to how it is to be done:
# "Supply of water meters *as per the specifications in Annexure A*".
_QUALIFIED = re.compile(
    r"\s+(?:as\s+per|in\s+accordance\s+with|as\s+(?:detailed|specified|described)|through|via"
    r"|under\s+the)\b",
    re.I,
)
# What follows "invited ... for" when it is no purchase: a period, a list announced below.
_NOT_A_PURCHASE = re.compile(
    r"^(?:(?:a|the)\s+)?(?:period|year|same|said)\b|\b(?:following|below|above|"
    r"(?:under|above|below)?\s*mentioned|listed|enclosed|attached|schedule)\b",
    re.I,
)


_TENDERS = re.compile(r"\b(?:tenders?|bids?|quotations?|proposals?|offers?)\b", re.I)


#: The kinds of statement that name the buyer, and their patterns ("invited" and "invites"
#: are one kind: an invitation).
_STATEMENTS = (
    ("invitation", _INVITED_BY),
    ("invitation", _INVITES),
    ("issued", _ISSUED_BY),
    ("behalf", _ON_BEHALF),
    ("party", _PARTY),
)


def _on_its_line(m: re.Match[str], end: int) -> str:
    """The name as far as it is printed on the statement's line, unless the line breaks
    inside it after a small word ("on behalf of the Ministry of" / "Health")."""
    group = "name" if m.group("name") is not None else "name2"
    name = m.group(group)
    inside = max(end - m.start(group), 0)
    if inside >= len(name) or re.search(r"\b(?:" + _JOINERS + r")\s*$", name[:inside], re.I):
        return name
    return name[:inside]


def _name(raw: str) -> str | None:
    name = _clean_text_value(re.sub(r"^the\s+", "", raw.strip(), flags=re.I))
    if name is None:
        return None
    # A name ends before a trailing small word the pattern took in ("Bank of India for").
    name = re.sub(r"(?:\s+(?:" + _JOINERS + r"))+$", "", name, flags=re.I)
    letters = re.findall(r"[^\W\d_]+", name)
    if len(letters) < 2 or _ROLE.search(name):
        return None
    return name


def _key(name: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", name.casefold()))


def _initials(name: str) -> set[str]:
    """ "BOI" and "BI" for "Bank of India": with and without the small words."""
    words = re.findall(r"[^\W\d_]+", name)
    every = "".join(w[0] for w in words).upper()
    capitals = "".join(w[0] for w in words if w[0].isupper()).upper()
    return {every, capitals}


def buyer_from_statements(lines: Sequence[str]) -> _Result[str]:
    """The body two statements of different kinds name as the one inviting or buying."""
    kinds: dict[str, set[str]] = {}
    first: dict[str, tuple[int, str]] = {}
    text_lines = list(lines[:MAX_LINES])
    for i, line in enumerate(text_lines):
        if not line:
            continue
        # A sentence wraps: read each line with the next one.
        window = f"{line} {next((ln for ln in text_lines[i + 1 : i + 3] if ln), '')}"
        found: list[tuple[str, str]] = []
        for kind, pattern in _STATEMENTS:
            for m in pattern.finditer(window):
                if m.start() < len(line):  # the statement opens on this line
                    found.append((kind, _on_its_line(m, len(line))))
        for m in _DEFINED.finditer(window):
            if m.start() < len(line):
                name = _name(_on_its_line(m, len(line)))
                # The short name must be the name's initials: "BOI" for "Bank of India".
                if name and m.group("short") in _initials(name):
                    found.append(("defined", name))
        for kind, raw in found:
            name = _name(raw)
            if name is None:
                continue
            key = _key(name)
            kinds.setdefault(key, set()).add(kind)
            first.setdefault(key, (i, name))
    agreed = [key for key, ks in kinds.items() if len(ks) >= 2]
    if len(agreed) != 1:
        return None, None  # nobody, or two bodies each named twice: which one buys is a guess
    at, name = first[agreed[0]]
    said = kinds[agreed[0]]
    rule = "named as the buyer by statements of " + ", ".join(sorted(said))
    # Read in the whole document: a dossier's contract forms name its parties at the end.
    return name, _Ev(at, rule, 0.6 if len(said) == 2 else 0.7)


def title_from_invitation(lines: Sequence[str]) -> _Result[str]:
    """What an invitation to tender says the tenders are for: "Sealed tenders are invited from
    registered contractors for Furniture works of the Zonal Office." (read across line
    breaks, to the end of its sentence)."""
    text_lines = list(lines[:MAX_LINES])
    for i, line in enumerate(text_lines):
        if not line or not _TENDERS.search(line):
            continue
        following = [ln for ln in text_lines[i + 1 : i + 8] if ln][:4]
        window = " ".join([line, *following])
        m = _INVITED_FOR.search(window)
        if m is None or m.start() >= len(line):
            continue
        what = _clean_text_value(_QUALIFIED.split(m.group("what"), maxsplit=1)[0])
        if what is None or _NOT_A_PURCHASE.search(what) or len(what.split()) < 2:
            continue
        return what, _Ev(i, "what the invitation to tender is for", 0.6, span=len(following))
    return None, None
