"""A text layer's two-column blocks read column by column.

Generators often draw two-column text row by row, and PDFium then interleaves the columns line
by line; PDFium's text rectangles say where each run stands, so the columns can be told apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Most text rectangles read from one page for the reading-order pass (a page beyond it keeps
#: PDFium's order): bounds the work on pathological pages.
MAX_SEGMENTS = 20_000


@dataclass(frozen=True)
class Segment:
    """A run of text on one line of a page, with its box in points (origin bottom left)."""

    text: str
    left: float
    bottom: float
    right: float
    top: float


def text_segments(textpage: Any) -> list[Segment]:
    count = textpage.count_rects()
    if count > MAX_SEGMENTS:
        return []
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
    """The page's text with two-column blocks read column by column, or None if it has none.

    A block is a run of at least 3 lines that each split into a left and a right part at the
    same gutter near the middle of the page, no text crossing it. Generators often draw such
    blocks row by row, and PDFium then interleaves the columns line by line; lines outside
    blocks (tables included) keep their left-to-right order.
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

    out: list[str] = []
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
            out += [" ".join(s.text for s in ln if s.right < middle + 1) for ln in block]
            out += [" ".join(s.text for s in ln if s.left > middle - 1) for ln in block]
            out = [ln for ln in out if ln]
            i = j
            continue
        out.append(" ".join(s.text for s in lines[i]))
        i += 1
    return "\n".join(out) if found else None
