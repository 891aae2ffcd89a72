"""Page furniture: running headers, footers and page numbers, which are not the notice's content.

A portal's or journal's name printed at the top of every page names a public body ("Procurement
Portal of the Region of ...") and reads like a letterhead; a footer carries dates and numbers.
Such lines are blanked before any field rule runs, so that no rule can take them for a value.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

_PAGE_NUMBER = re.compile(
    r"(?:^|[\s-])(?:page|seite|p\.)\s*\d{1,3}\s*(?:(?:of|von|sur|de|/)\s*\d{1,3})?\s*$"
    r"|^\s*-?\s*\d{1,3}\s*(?:/\s*\d{1,3})?\s*-?\s*$",
    re.I,
)
#: How many non-empty lines at the top and at the bottom of a page may be furniture.
EDGE = 2
#: Lines longer than this are content even when they repeat.
MAX_FURNITURE_CHARS = 160


def _key(line: str) -> str:
    """A line as it repeats from page to page: page numbers and dates differ, the rest not."""
    return re.sub(r"\d+", "#", line.lower()).strip()


def _edges(page: Sequence[str]) -> list[int]:
    filled = [i for i, line in enumerate(page) if line]
    return filled[:EDGE] + filled[-EDGE:]


def is_page_number(line: str) -> bool:
    return bool(_PAGE_NUMBER.search(line)) and len(line) <= MAX_FURNITURE_CHARS


def strip_furniture(pages: Sequence[list[str]]) -> list[list[str]]:
    """The pages' lines with running headers, footers and page numbers blanked (kept as "").

    A line at the top or bottom of a page is furniture when it carries a page number, or when
    the same line (digits aside) sits at the top or bottom of at least two pages. A document
    given as one text without page breaks has its breaks found at the page-number lines.
    """
    if len(pages) == 1:
        pages = _split_at_page_numbers(pages[0])
    counts: Counter[str] = Counter()
    for page in pages:
        counts.update({_key(page[i]) for i in _edges(page)})
    out: list[list[str]] = []
    for page in pages:
        page = list(page)
        for i in _edges(page):
            line = page[i]
            if len(line) > MAX_FURNITURE_CHARS:
                continue
            if is_page_number(line) or (len(pages) > 1 and counts[_key(line)] >= 2):
                page[i] = ""
        out.append(page)
    return out


def _split_at_page_numbers(lines: list[str]) -> list[list[str]]:
    """One text cut into pages after each line that is a page number (footers end pages)."""
    pages: list[list[str]] = [[]]
    for line in lines:
        pages[-1].append(line)
        if line and is_page_number(line):
            pages.append([])
    if len(pages) > 1 and not any(pages[-1]):
        pages[-2].extend(pages.pop())
    return pages


def running_lines(pages: Sequence[list[str]]) -> list[str]:
    """The lines repeated at the top or bottom of at least three pages, as printed (the first
    time), most repeated first: a document's running header often names it ("ID0119 -
    Centers of Excellence Discovery BPA")."""
    if len(pages) < 3:
        return []
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for page in pages:
        for i in _edges(page):
            line = page[i]
            if line and len(line) <= MAX_FURNITURE_CHARS and not is_page_number(line):
                key = _key(line)
                counts[key] += 1
                first.setdefault(key, line)
    return [first[key] for key, n in counts.most_common() if n >= 3]
