"""The title from the document's own heading structure, when its pages come with a layout.

A tender document prints what it buys as the largest text of its first page, or under a
"Subject" / "Objet" / "Gegenstand" label; around it stand the document's kind ("REQUEST FOR
PROPOSAL"), the buyer's name, dates and numbers. The title here is the largest heading of the
first pages that is none of those, read across the lines it wraps over; a heading that only a
little larger text beats, or that shares its size with others, is believed less.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pg_pipeline_documents.extract_offline.evidence import _Ev
from pg_pipeline_documents.extract_offline.labels import _ADDRESS_LINE, _AUTHORITY_WORDS
from pg_pipeline_documents.extract_offline.normalise import _clean_text_value, _words
from pg_pipeline_documents.layout import PageLayout, Span, lines_of

#: Pages whose headings may hold the title.
TITLE_PAGES = 2
#: A heading's text is at least this much larger than the page's body text, or bold and larger.
HEADING_RATIO = 1.15
#: Lines of one heading at most (a title wraps over two or three).
MAX_HEADING_LINES = 4


@dataclass(frozen=True)
class _Line:
    text: str
    size: float
    bold: bool
    y0: float
    y1: float
    x0: float
    x1: float


def _visual_lines(spans: Sequence[Span]) -> list[_Line]:
    """Spans on one line (vertical overlap) joined left to right, top down."""
    lines = []
    for group in lines_of(spans):
        sizes = [s.size or 0.0 for s in group]
        chars = sum(len(s.text) for s in group)
        lines.append(
            _Line(
                text=" ".join(s.text for s in group),
                size=max(sizes),
                bold=sum(len(s.text) for s in group if s.bold) * 2 > chars,
                y0=min(s.y0 for s in group),
                y1=max(s.y1 for s in group),
                x0=min(s.x0 for s in group),
                x1=max(s.x1 for s in group),
            )
        )
    return lines


def body_size(layouts: Sequence[PageLayout]) -> float | None:
    """The size most of the text is printed in (by characters)."""
    weight: dict[float, int] = {}
    for layout in layouts:
        for span in layout.spans:
            if span.size:
                key = round(span.size * 2) / 2
                weight[key] = weight.get(key, 0) + len(span.text)
    return max(weight, key=lambda k: weight[k]) if weight else None


@dataclass(frozen=True)
class Heading:
    text: str
    size: float
    bold: bool
    page: int  # 0-based
    top: float


def headings(layouts: Sequence[PageLayout | None], pages: int = TITLE_PAGES) -> list[Heading]:
    """The first pages' headings, each joined over the lines it wraps onto, in page order."""
    read = [layout for layout in layouts[:pages] if layout is not None]
    body = body_size(read)
    if body is None:
        return []
    out: list[Heading] = []
    for number, layout in enumerate(layouts[:pages]):
        if layout is None:
            continue
        run: list[_Line] = []
        for line in [*_visual_lines(layout.spans), None]:
            big = line is not None and (
                line.size >= body * HEADING_RATIO or (line.bold and line.size > body * 1.02)
            )
            if (
                run
                and line is not None
                and big
                and abs(line.size - run[-1].size) < 0.6
                and line.bold == run[-1].bold
                and line.y0 - run[-1].y1 < line.size * 0.9
                and len(run) < MAX_HEADING_LINES
            ):
                run.append(line)
                continue
            if run:
                text = " ".join(ln.text for ln in run)
                out.append(Heading(text, run[0].size, run[0].bold, number, run[0].y0))
            run = [line] if line is not None and big else []
    return out


# A heading that goes on to cite the rule it is issued under: "... Agreement Reference FAR
# 8.405-3(b)(1), for services referenced herein". The citation is not part of the name.
_CITATION = re.compile(
    r"\s+(?:reference|ref\.|pursuant\s+to|in\s+accordance\s+with|under|per|issued\s+under)\s+"
    r"(?:FAR|DFARS|regulations?|article|section|clause|directive|§).*$",
    re.I,
)


def _plausible(text: str, not_title: Callable[[str], str | None]) -> str | None:
    """The heading as a title, or None for a heading that is something else."""
    text = _CITATION.sub("", text)
    value = _clean_text_value(re.sub(r"^(?:for|pour|f[üu]r)\s+(?:the\s+)?", "", text, flags=re.I))
    if not value or not_title(value) is not None:
        return None
    if "@" in value or "http" in value.lower() or _ADDRESS_LINE.search(value):
        return None
    words = value.split()
    if len(words) < 2 or len(value) > 200:
        return None
    chars = [c for c in value if not c.isspace()]
    if sum(c.isdigit() for c in chars) > 0.2 * len(chars):
        return None  # a date, a number, a reference
    if re.search(r"[^\W\d_][^:]{0,40}:\s*\S", value):
        return None  # a label and its value ("Solicitation Number: ...")
    if _AUTHORITY_WORDS.search(value) and len(words) <= 6 and not says_what_is_bought(value):
        return None  # a body's name: the buyer, its department
    return value


# Words that say what is bought: a heading with them is a title even when it names a body
# ("Cleaning services for the County Council offices").
_BUYS = re.compile(
    r"\b(?:supply|supplies|provision|services?\s+for|works?\b|construction|maintenance|"
    r"purchase|procurement\s+of|framework|agreement|contract\s+for|installation|repair|"
    r"renovation|refurbishment|replacement|design|delivery|fourniture|travaux|prestations?|"
    r"lieferung|bau|sanierung|neubau|erneuerung)\b",
    re.I,
)


def says_what_is_bought(value: str) -> bool:
    """Whether a name holds words that name a purchase ("Supply of ...", "... works")."""
    return bool(_BUYS.search(value))


def title_from_headings(
    layouts: Sequence[PageLayout | None],
    not_title: Callable[[str], str | None],
    avoid: Sequence[str] = (),
    text: str = "",
) -> tuple[str, _Ev] | None:
    """The largest plausible heading of the first pages, and how sure that is.

    A heading is believed (confidence 0.6) when it is the one heading of its size and something
    else vouches for it as a name of what is bought: words that say so ("supply", "works",
    "agreement"), or its words printed again elsewhere in ``text``. Otherwise it is a candidate
    only (0.4). ``avoid`` holds names that are not the title (the buyer's); ``not_title`` says
    why a value is no title (the document's kind, its structure, a table header) or None."""
    found = headings(layouts)
    avoided = {_words(a) for a in avoid if a}
    candidates: list[tuple[Heading, str]] = []
    for heading in found:
        value = _plausible(heading.text, not_title)
        if value is None or _words(value) in avoided:
            continue
        candidates.append((heading, value))
    if not candidates:
        return None
    best_size = max(h.size for h, _ in candidates)
    top = [(h, v) for h, v in candidates if h.size >= best_size - 0.5]
    bold = [(h, v) for h, v in top if h.bold]
    pick = (bold or top)[0]
    heading, value = pick
    alone = len(bold or top) == 1
    vouched = says_what_is_bought(value) or _repeated(value, heading.text, text)
    confidence = 0.6 if alone and vouched else 0.4
    return value, _Ev(-1, "largest heading of the first pages", confidence)


def _repeated(value: str, heading: str, text: str) -> bool:
    """Whether the heading's words are printed again in the text, apart from the heading."""
    key = _words(value)
    if len(key.split()) < 3:
        return False
    flat = " " + " ".join(_words(line) for line in text.split("\n") if line) + " "
    return flat.count(f" {key} ") >= 2
