"""Labels recognised by their word roots: which field a label names, and where its value is.

The data is in ``label_roots``. A line is read as a label and a value in one of three ways:

* a separator: "Ausschreibungsnummer: 23-2714", "Remise des offres - 11/01/2027";
* label words, then the value: "Organisme acheteur Centre hospitalier de Montclair",
  "Date limite de dépôt des offres 11 janvier 2027" (the label is the run of words that are
  roots, qualifiers or connectors, after at most two other words such as "Voraussichtlicher");
* a label alone on its line, its value on the next one.

A label in sentence case may hold a word the roots lack ("Title attributed to the contract
Catering ..."), never ends with an article ("Bezeichnung der Maßnahme") and keeps a bracketed
note ("Vergabenummer (intern)"). The field rules use these only after their own phrase patterns
found nothing, and each checks that the value looks like its field's (a date, an amount, a
capitalised name, an identifier).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from pg_pipeline_documents.extract_offline.label_roots import (
    ARTICLES,
    BLOCKERS,
    CONNECTORS,
    LOT_WORDS,
    PATTERNS,
    QUALIFIERS,
)

#: Labelled lines offered per field at most (a notice prints a field's label a few times; a
#: text where thousands of lines look like labels is not a notice, and the rules stay fast).
MAX_HITS = 40
#: A label is short: more words than this are a sentence.
MAX_LABEL_WORDS = 12
#: Words other than roots that may open a label ("Voraussichtlicher Wert", "Latest date").
MAX_LEADING_WORDS = 2


_UNMARKED = str.maketrans({"ß": "ss", "œ": "oe", "æ": "ae", "ł": "l", "đ": "d", "ø": "o"})


@lru_cache(maxsize=65536)
def fold(text: str) -> str:
    """Lower case without accents: "Schätzwert" -> "schatzwert", "Dépôt" -> "depot"."""
    # Letters that carry no combining mark to drop: "składania" -> "skladania", "søknad".
    text = text.lower().translate(_UNMARKED)
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    # Letters of any script: a Cyrillic label is words too ("Срок подачи заявок").
    return re.findall(r"[^\W_]+", fold(text))


@dataclass(frozen=True)
class _Root:
    text: str
    mode: str  # "prefix", "part" or "exact"

    @classmethod
    def parse(cls, spec: str) -> _Root:
        if spec.startswith("*"):
            return cls(spec[1:], "part")
        if spec.startswith("="):
            return cls(spec[1:], "exact")
        return cls(spec, "prefix")

    def matches(self, word: str) -> bool:
        if self.mode == "exact":
            return word == self.text
        if self.mode == "part":
            return self.text in word
        return word.startswith(self.text)


_Pattern = tuple[tuple[_Root, ...], ...]


def _compile(pattern: str) -> _Pattern:
    return tuple(tuple(_Root.parse(alt) for alt in group.split("|")) for group in pattern.split())


_PATTERNS: dict[str, list[_Pattern]] = {
    field: [_compile(p) for group in languages.values() for p in group]
    for field, languages in PATTERNS.items()
}
_BLOCKERS: dict[str, tuple[_Root, ...]] = {
    field: tuple(_Root.parse(b) for b in roots) for field, roots in BLOCKERS.items()
}
_LOT = tuple(_Root.parse(w) for w in LOT_WORDS)
_LABEL_ROOTS: tuple[_Root, ...] = (
    *(root for patterns in _PATTERNS.values() for p in patterns for g in p for root in g),
    *(root for roots in _BLOCKERS.values() for root in roots),
    *_LOT,
)


_ROOT_IDS: dict[_Root, int] = {root: n for n, root in enumerate(dict.fromkeys(_LABEL_ROOTS))}


@lru_cache(maxsize=65536)
def _roots_of(word: str) -> frozenset[int]:
    """The roots a word matches (words repeat, so each is looked up once)."""
    return frozenset(n for root, n in _ROOT_IDS.items() if root.matches(word))


def _any(roots: Sequence[_Root], ws: Sequence[str]) -> bool:
    ids = {_ROOT_IDS[r] for r in roots}
    return any(ids & _roots_of(w) for w in ws)


def _pattern_matches(pattern: _Pattern, ws: Sequence[str]) -> bool:
    return all(_any(group, ws) for group in pattern)


@lru_cache(maxsize=4096)
def label_field(label: str) -> str | None:
    """The field a label names, or None when it names none or more than one."""
    ws = words(label)
    if not ws or len(ws) > MAX_LABEL_WORDS:
        return None
    found = [
        field
        for field, patterns in _PATTERNS.items()
        if any(_pattern_matches(p, ws) for p in patterns) and not _any(_BLOCKERS[field], ws)
    ]
    return found[0] if len(found) == 1 else None


@lru_cache(maxsize=4096)
def label_is_ambiguous(label: str) -> bool:
    """Whether the label's words match the patterns of more than one field, so that only a
    blocker chose between them: "Title attributed to the contract by the contracting
    authority" holds both a title's and a buyer's words. The choice is then a guess. Words that
    only name what follows them do not count (see ``_NAMING_WORDS``)."""
    ws = [w for w in words(label) if w not in _NAMING_WORDS]
    if not ws or len(ws) > MAX_LABEL_WORDS:
        return False
    matched = [f for f, ps in _PATTERNS.items() if any(_pattern_matches(p, ws) for p in ps)]
    return len(matched) > 1


#: Words that name whatever follows them ("Name of the buyer", "Bezeichnung des Auftraggebers"):
#: beside another field's words they say what that field is called, not that the label is a
#: title.
_NAMING_WORDS = frozenset(
    {"name", "namen", "bezeichnung", "benennung", "nom", "designation"}
    | {"nombre", "denominacion", "denominazione", "nome", "designacao", "naam", "nazwa"}
    | {"наименование", "наименования", "назва", "наименування", "наименованието"}
)


def names_lot(label: str) -> bool:
    """Whether a label speaks of a lot ("Estimation du lot", "Wert des Loses", "Loswert")."""
    return _any(_LOT, words(label))


@lru_cache(maxsize=65536)
def _label_word(word: str) -> tuple[bool, bool]:
    """(belongs in a label, is a root): "des" (True, False), "offres" (True, True)."""
    pieces = words(word)
    if not pieces or re.search(r"\d", word):
        return False, False
    roots = [bool(_roots_of(p)) for p in pieces]
    belongs = all(
        is_root or p in CONNECTORS or p in QUALIFIERS
        for p, is_root in zip(pieces, roots, strict=True)
    )
    return belongs, any(roots)


# Section numbering in front of a label: "II.1.1)", "2.3", "a)", "two.1)", a bullet. Roman
# numerals count only when a dot, a bracket or a blank ends them ("Instance" keeps its "I").
_LEAD = re.compile(
    r"^(?:(?:[IVX]+|\d+|(?i:one|two|three|four|five|six|seven|eight))(?:\.\d+)*[.)]?"
    r"|[a-z]\)|[•*\-])\s+"
    r"|^(?:[IVX]+|\d+)(?:\.\d+)+\)?(?=[^\W\d_])"
)
_SEPARATED = re.compile(
    r"^(?P<label>[^\W\d_][^:|]{0,80}?)\s*(?:\s?:|\s\|\s|\s-\s|\s?\.{3,})\s*(?P<value>.*)$"
)


@dataclass(frozen=True)
class Split:
    label: str
    value: str
    separated: bool
    leading: int = 0  # words before the label's first root ("Voraussichtlicher Wert")


@lru_cache(maxsize=32768)  # more than the lines read, so that each field's pass reuses them
def split_label(line: str) -> Split | None:
    """The line's label and the value after it, when its first words are a label."""
    body = _LEAD.sub("", line).strip()
    m = _SEPARATED.match(body)
    label_words = len(words(m.group("label"))) if m else 0
    if m and not re.search(r"\d", m.group("label")) and label_words <= MAX_LABEL_WORDS:
        return Split(m.group("label").strip(), m.group("value").strip(), True)
    raw = body.split()
    seen_root = False
    leading = inner = 0
    end = 0
    for k, word in enumerate(raw[: MAX_LABEL_WORDS + 1]):
        belongs, is_root = _label_word(word)
        if is_root:
            seen_root = True
        elif not belongs:
            if re.search(r"\d", word):
                break
            if seen_root:
                # One other word inside a label, when a root follows it: "Les offres
                # *doivent* parvenir au plus tard le".
                nxt = raw[k + 1] if k + 1 < len(raw) else ""
                if inner or not _label_word(nxt)[1]:
                    break
                inner += 1
            elif leading >= MAX_LEADING_WORDS:
                break
            else:
                leading += 1
        end = k + 1
    if not seen_root:
        return None
    # A label does not end with an article: "Bezeichnung der *Maßnahme*", "Objet de *l'achat*".
    if 0 < end < len(raw) and fold(raw[end - 1]) in ARTICLES and not re.search(r"\d", raw[end]):
        end += 1
    # A note in brackets belongs to its label: "Vergabenummer *(intern)*", "Budget *(excl. VAT)*".
    if end < len(raw) and raw[end].startswith("("):
        close = next((k for k in range(end, min(end + 4, len(raw))) if ")" in raw[k]), None)
        if close is not None and not re.search(r"\d", " ".join(raw[end : close + 1])):
            end = close + 1
    # OCR reads a table's rule between label and value as "|", "_" or "[".
    value = " ".join(raw[end:]).lstrip(" _|[]:-")
    return Split(" ".join(raw[:end]), value, False, leading)


@dataclass(frozen=True)
class Labelled:
    index: int  # the label's line
    field: str
    label: str
    value: str  # the text after the label, or the next line when the label stands alone
    value_line: int  # the line the value was read from
    separated: bool  # a separator or a line break stands between label and value


def labelled(lines: Sequence[str], field: str, skip: set[int] | None = None) -> list[Labelled]:
    """Every line whose label names ``field``, with its value, in reading order.

    A short line without digits whose words run on past the label ("Montant prévisionnel")
    may be a label standing alone: its next line is offered as a value too, after the words
    on its own line.
    """
    out: list[Labelled] = []
    for i, line in enumerate(lines):
        if len(out) >= MAX_HITS:
            break
        if not line or (skip and i in skip):
            continue
        split = split_label(line)
        # A run-on label that names another field, or runs into a lower-case word, may be a
        # label in sentence case with a word the roots lack.
        if split is not None and not split.separated:
            named = label_field(split.label)
            if named != field or split.value[:1].islower():
                split = _sentence_case_label(line, field) or split
        if split is None or label_field(split.label) != field:
            if _label_alone(line) == field:  # "Name given to the tender" / the title below
                split = Split(line, "", True)
            else:
                continue
        if split.value:
            out.append(Labelled(i, field, split.label, split.value, i, split.separated))
            alone = (
                not split.separated
                and not split.value.isupper()  # a name in capitals beside its label
                and not sentence_tail(line)
                and not re.search(r"\d", line)
                and len(line.split()) <= MAX_LABEL_WORDS // 2
                and label_field(line) == field
            )
            if not alone:
                continue
        j = next((j for j in range(i + 1, min(i + 3, len(lines))) if lines[j]), None)
        if j is None or (skip and j in skip) or _is_label_line(lines[j]):
            continue
        label = line if split.value else split.label
        out.append(Labelled(i, field, label, lines[j], j, True))
    return out


def _label_alone(line: str) -> str | None:
    """The field a short line without digits names as a whole, as a label above its value:
    "Title attributed to the contract" holds a word the roots lack, but names a title."""
    if re.search(r"\d", line) or not 1 < len(line.split()) <= MAX_LABEL_WORDS // 2:
        return None
    if sentence_tail(line):
        return None
    return label_field(_LEAD.sub("", line).rstrip(" :"))


def sentence_tail(line: str) -> bool:
    """A line that ends a sentence of running text rather than labels anything: it opens in
    lower case ("local authorities requirement, traffic regulations etc;"), or ends as a clause
    or a list item does, with a comma or a semicolon after its last word, or with "etc"."""
    body = _LEAD.sub("", line).strip()
    return body[:1].islower() or bool(_CLAUSE_END.search(body))


# A comma or semicolon right after a word; one after a space is often OCR's reading of a
# label's colon ("Procurement reference ;").
_CLAUSE_END = re.compile(r"(?:\w[,;]|\betc\W*)$", re.I)


def _sentence_case_label(line: str, field: str) -> Split | None:
    """A label in sentence case with words the roots lack, then a capitalised value on the same
    line: "Title attributed to the contract Catering services for school canteens"."""
    return next((split for named, split in _sentence_case_splits(line) if named == field), None)


@lru_cache(maxsize=32768)  # each field's pass asks about the same lines
def _sentence_case_splits(line: str) -> tuple[tuple[str, Split], ...]:
    """Every field's first sentence-case label of the line, with its split."""
    raw = _LEAD.sub("", line).split()
    found: dict[str, Split] = {}
    for k in range(2, min(len(raw) - 1, MAX_LABEL_WORDS // 2) + 1):
        head, rest = raw[:k], raw[k]
        if any(not w.islower() for w in head[1:]) or re.search(r"\d", " ".join(head)):
            break
        if fold(head[-1]) in ARTICLES or not rest[:1].isupper():
            continue
        named = label_field(" ".join(head))
        if named is not None and named not in found:
            found[named] = Split(" ".join(head), " ".join(raw[k:]), False)
    return tuple(found.items())


def _is_label_line(line: str) -> bool:
    """A line that is itself a label of some field (and so not another label's value).

    Without a separator, only a line that opens with a label word counts: "Highlands Water
    Authority" ends with a root, but is a name.
    """
    split = split_label(line)
    opens = split is not None and (split.separated or not split.leading)
    if opens and split is not None and label_field(split.label) is not None:
        return True
    return _label_alone(line) is not None and line[:1].isupper() and not line.istitle()
