"""A text layer's two-column blocks read column by column.

Generators often draw two-column text row by row, and PDFium then interleaves the columns line
by line; PDFium's text rectangles say where each run stands, so the columns can be told apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

#: Most (text rectangle, character) pairs the reading-order pass may cost one page: PDFium finds
#: a rectangle's text by looking at each of the page's characters, so the pass grows with the
#: product. The densest real pages seen have 1.2 million (400 runs of 3,000 characters); a page
#: of 10,000 short lines has 490 million (40 s). A page beyond it keeps PDFium's order.
MAX_RECT_CHAR_PAIRS = 20_000_000


@dataclass(frozen=True)
class Segment:
    """A run of text on one line of a page, with its box in points (origin bottom left)."""

    text: str
    left: float
    bottom: float
    right: float
    top: float


def affordable_rects(textpage: Any) -> int:
    """How many text rectangles of the page the pass may read (:data:`MAX_RECT_CHAR_PAIRS`)."""
    return MAX_RECT_CHAR_PAIRS // max(1, int(textpage.count_chars()))


def text_segments(textpage: Any) -> list[Segment]:
    count = textpage.count_rects()
    segments = []
    for index in range(count):
        left, bottom, right, top = textpage.get_rect(index)
        text = " ".join(str(textpage.get_text_bounded(left, bottom, right, top)).split())
        if text:
            segments.append(Segment(text, left, bottom, right, top))
    return segments


def _visual_lines(segments: list[Segment]) -> list[list[Segment]]:
    """Segments grouped into lines (vertical centres within half a line height), top down."""
    lines: list[list[Segment]] = []
    for seg in sorted(segments, key=lambda s: (-(s.top + s.bottom) / 2, s.left)):
        centre = (seg.top + seg.bottom) / 2
        if lines:
            last = lines[-1][0]
            height = max(last.top - last.bottom, seg.top - seg.bottom, 1.0)
            if abs((last.top + last.bottom) / 2 - centre) < height / 2:
                lines[-1].append(seg)
                continue
        lines.append([seg])
    return [sorted(line, key=lambda s: s.left) for line in lines]


def columns_in_reading_order(segments: list[Segment], page_width: float) -> str | None:
    """The page's text with two-column blocks read column by column, or None if it has none
    (the text is then PDFium's own order, see :func:`reading_rows`)."""
    rows, found = reading_rows(segments, page_width)
    return "\n".join(" ".join(s.text for s in row) for row in rows) if found else None


def reading_rows(segments: list[Segment], page_width: float) -> tuple[list[list[Segment]], bool]:
    """The segments as rows in reading order, each left to right, and whether the page has a
    two-column block.

    A block is a run of at least 3 lines that each split into a left and a right part at the
    same gutter near the middle of the page, no text crossing it. Generators often draw such
    blocks row by row, and PDFium then interleaves the columns line by line: a block's rows are
    its left column's lines and then its right column's. Lines outside blocks (tables included)
    are rows as they stand, top down.
    """
    lines = _visual_lines(segments)

    def gutter(line: list[Segment]) -> float | None:
        left = [s for s in line if s.right < page_width * 0.55]
        right = [s for s in line if s.left > page_width * 0.45]
        if not left or not right or len(left) + len(right) != len(line):
            return None
        gap_left, gap_right = max(s.right for s in left), min(s.left for s in right)
        # One run a side: a table row has a cell more, and keeps its left-to-right order.
        if gap_right - gap_left < 8 or len(right) != 1 or len(left) != 1:
            return None
        return (gap_left + gap_right) / 2

    def one_side(line: list[Segment]) -> bool:
        return all(s.right < page_width * 0.55 for s in line) or all(
            s.left > page_width * 0.45 for s in line
        )

    def centre(line: list[Segment]) -> float:
        return (line[0].top + line[0].bottom) / 2

    rows: list[list[Segment]] = []
    found = False
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and gutter(lines[j]) is not None:
            j += 1
        if j - i >= 3:
            # The longer column goes on alone for a few lines at the same pitch.
            pitch = (centre(lines[i]) - centre(lines[j - 1])) / (j - 1 - i)
            while (
                j < len(lines)
                and one_side(lines[j])
                and centre(lines[j - 1]) - centre(lines[j]) <= pitch * 1.2
            ):
                j += 1
            found = True
            block = lines[i:j]
            middle = page_width / 2
            lefts = [[s for s in ln if s.right < middle + 1] for ln in block]
            # The rest of each line is its right part, whatever stands across the middle (a
            # lone line of the longer column, a table's cell): none of its text is lost.
            rights = [
                [s for s in ln if all(s is not t for t in left)]
                for ln, left in zip(block, lefts, strict=True)
            ]
            rows += [row for row in lefts + rights if row]
            i = j
            continue
        rows.append(lines[i])
        i += 1
    return rows, found


class Boxed(Protocol):
    """Anything with a box in points from the page's top-left corner (a layout's span)."""

    @property
    def x0(self) -> float: ...
    @property
    def y0(self) -> float: ...
    @property
    def x1(self) -> float: ...
    @property
    def y1(self) -> float: ...


B = TypeVar("B", bound=Boxed)


def in_reading_order(items: Sequence[B], page_width: float, page_height: float) -> list[B]:
    """``items`` as :func:`reading_rows` reads them: top down, two-column blocks column by
    column, each line left to right."""
    segments = [Segment("", i.x0, page_height - i.y1, i.x1, page_height - i.y0) for i in items]
    item_of = {id(segment): item for segment, item in zip(segments, items, strict=True)}
    rows, _ = reading_rows(segments, page_width)
    return [item_of[id(segment)] for row in rows for segment in row]
