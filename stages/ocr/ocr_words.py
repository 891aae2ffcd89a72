"""The words tesseract read on a scan, with their boxes, as the child reports them: the parent
makes the page's layout of them (:func:`ocr_layout.scan_layout`), whichever way tesseract
ran (in the child, or as the command with its TSV output)."""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

#: Most words a child reports for one page (a dense page of small print has 1,000-2,000):
#: bounds what a pathological scan costs to send and to group.
MAX_WORDS = 20_000


@dataclass(frozen=True)
class OcrWord:
    """A word tesseract read, its box in pixels from the image's top-left corner, and the line
    it belongs to (any key that tells one line from the next) with the height of the line's
    capitals and ascenders above its baseline, in pixels, when tesseract gave the baseline."""

    line: Any
    text: str
    left: int
    top: int
    right: int
    bottom: int
    line_ascent: float | None = None

    def as_list(self) -> list[Any]:
        return list(astuple(self))


#: Capitals and ascenders stand about this high above the baseline, in ems, in Latin type
#: (Helvetica's capitals 0.72, Times' 0.66, DejaVu's 0.73; their ascenders 0.68-0.76).
CAP_HEIGHT_EM = 0.72


def type_size(line: list[OcrWord]) -> float:
    """A line's type size in pixels: the height of its capitals and ascenders over the baseline,
    in ems (:data:`CAP_HEIGHT_EM`). A line of capitals and one of lower case in the same type
    get the same size, which their boxes' heights (descenders or none) would not.

    Without tesseract's baseline (its TSV output has none), the baseline is the highest bottom
    among the line's words at least half as tall as its tallest (words without descenders end
    on it; a dash or a full stop would stop short of it): a line whose every word descends
    comes out about a quarter too big.
    """
    ascent = line[0].line_ascent
    if ascent is None:
        tallest = max(w.bottom - w.top for w in line)
        baseline = min(w.bottom for w in line if 2 * (w.bottom - w.top) >= tallest)
        ascent = baseline - min(w.top for w in line)
    return max(ascent, 1.0) / CAP_HEIGHT_EM
