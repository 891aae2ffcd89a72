"""A page's words with where they stand: what the extractor reads beside the plain text.

The OCR stage fills it from the PDF's text layer (PDFium's character boxes and font sizes) or
from tesseract's word boxes on a scan; the extractor pairs labels with values side by side,
below and in table cells, and finds the title by its size and place.

``spans_from_words`` is the one way words become spans, whoever read the words:
``layout_from_textpage`` feeds it PDFium's characters, and a scan's reader feeds it tesseract's
words (their box height standing in for the font size).
"""

from __future__ import annotations

import ctypes
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Span(BaseModel):
    """A run of words on one line, with no wide gap inside it (a table cell, a label, a value).

    Coordinates are PDF points with the origin at the page's top-left corner, y growing down.
    """

    model_config = ConfigDict(extra="forbid")

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    #: Font size in points from the text layer; on a scan, the glyph height tesseract measured.
    size: float | None = None
    bold: bool = False


class PageLayout(BaseModel):
    """A page's spans in reading order, and the page's size in points."""

    model_config = ConfigDict(extra="forbid")

    width: float = Field(gt=0)
    height: float = Field(gt=0)
    spans: list[Span] = Field(default_factory=list)


@dataclass(frozen=True)
class Word:
    """A word with its box (top-left origin, points), its font size and whether it is bold."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
    bold: bool = False


#: Characters read from one page at most: a page of a notice has a few thousand; a megabyte of
#: digits on one page is not a notice, and its layout is only its first part.
MAX_CHARS = 60_000
#: Spans kept per page at most (bounds the extractor's pairing work on pathological pages).
MAX_SPANS = 6_000
#: A gap wider than this many times the font size between two words ends a span: word spaces
#: are a quarter to half of it, even in justified text; table cells and form boxes stand wider.
SPAN_GAP_EM = 1.0
#: Words whose vertical centres differ by less than this share of their height are on one line.
SAME_LINE = 0.5


def spans_from_words(words: Sequence[Word]) -> list[Span]:
    """Words grouped into visual lines (top down) and, within a line, into spans (left to right)
    cut at wide gaps and at a change of font size by more than a third."""
    lines: list[list[Word]] = []
    for word in sorted(words, key=lambda w: ((w.y0 + w.y1) / 2, w.x0)):
        centre = (word.y0 + word.y1) / 2
        if lines:
            last = lines[-1]
            height = max(max(w.y1 - w.y0 for w in last), word.y1 - word.y0, 1.0)
            last_centre = sum((w.y0 + w.y1) / 2 for w in last) / len(last)
            if abs(last_centre - centre) < height * SAME_LINE:
                last.append(word)
                continue
        lines.append([word])
    spans: list[Span] = []
    for line in lines:
        run: list[Word] = []
        for word in sorted(line, key=lambda w: w.x0):
            if run:
                prev = run[-1]
                size = max(min(prev.size, word.size), 1.0)
                wide = word.x0 - prev.x1 > SPAN_GAP_EM * size
                resized = max(prev.size, word.size) > 1.33 * size
                if wide or resized:
                    spans.append(_span(run))
                    run = []
            run.append(word)
        if run:
            spans.append(_span(run))
        if len(spans) >= MAX_SPANS:
            return spans[:MAX_SPANS]
    return spans


def _span(words: Sequence[Word]) -> Span:
    chars = sum(len(w.text) for w in words)
    bold_chars = sum(len(w.text) for w in words if w.bold)
    sizes = sorted(w.size for w in words)
    return Span(
        text=" ".join(w.text for w in words),
        x0=round(min(w.x0 for w in words), 1),
        y0=round(min(w.y0 for w in words), 1),
        x1=round(max(w.x1 for w in words), 1),
        y1=round(max(w.y1 for w in words), 1),
        size=round(sizes[len(sizes) // 2], 1),
        bold=bold_chars * 2 > chars,
    )


_BOLD_NAME = re.compile(rb"bold|black|heavy|semibold|demi", re.I)
#: PDFium's font flag for a font drawn bold whatever its name (PDF's ForceBold).
_FORCE_BOLD = 1 << 18


def layout_from_textpage(
    textpage: Any, width: float, height: float, *, origin: tuple[float, float] = (0.0, 0.0)
) -> PageLayout:
    """A page's layout from its PDFium text page (``pypdfium2.PdfTextPage``).

    ``width`` and ``height`` are the page's size in points, ``origin`` the bottom-left corner of
    its box in PDF space (non-zero for a media box that does not start at 0, 0). The font size is
    the one the text is drawn at (the font's size scaled by the text matrix: some generators set
    size 1 and scale), and a character is bold by its font's weight, name or flags.
    """
    import pypdfium2.raw as raw  # the text layer's reader; the extractor never needs it

    count = min(int(raw.FPDFText_CountChars(textpage)), MAX_CHARS)
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    base_x, base_y = ctypes.c_double(), ctypes.c_double()
    matrix = raw.FS_MATRIX()
    name = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    words: list[Word] = []
    chars: list[tuple[str, float, float, float, float, float, bool]] = []

    def flush() -> None:
        if chars:
            words.append(
                Word(
                    text="".join(c[0] for c in chars),
                    x0=min(c[1] for c in chars),
                    y0=min(c[2] for c in chars),
                    x1=max(c[3] for c in chars),
                    y1=max(c[4] for c in chars),
                    size=max(c[5] for c in chars),
                    bold=sum(c[6] for c in chars) * 2 > len(chars),
                )
            )
            chars.clear()

    ox, oy = origin
    for index in range(count):
        code = raw.FPDFText_GetUnicode(textpage, index)
        char = chr(code) if 0 < code < 0x110000 else ""
        if not char or char.isspace() or char in "\ufffe\uffff":
            flush()
            continue
        if not raw.FPDFText_GetCharBox(textpage, index, left, right, bottom, top):
            continue
        size = float(raw.FPDFText_GetFontSize(textpage, index))
        if raw.FPDFText_GetMatrix(textpage, index, matrix):
            size *= math.sqrt(abs(matrix.a * matrix.d - matrix.b * matrix.c)) or 1.0
        weight = int(raw.FPDFText_GetFontWeight(textpage, index))
        raw.FPDFText_GetFontInfo(textpage, index, name, len(name), flags)
        bold = (
            weight >= 600 or bool(_BOLD_NAME.search(name.value)) or bool(flags.value & _FORCE_BOLD)
        )
        x0, x1 = left.value - ox, right.value - ox
        if raw.FPDFText_GetCharOrigin(textpage, index, base_x, base_y):
            # A line's words share its baseline: boxes from it and the font size line up, where
            # the glyphs' own boxes (a full stop, a capital) would not.
            baseline = height - (base_y.value - oy)
            y0, y1 = baseline - 0.8 * size, baseline + 0.2 * size
        else:
            y0, y1 = height - (top.value - oy), height - (bottom.value - oy)
        if chars:
            prev = chars[-1]
            gap = x0 - prev[3]
            # A word ends where the next character stands apart or on another line, even when
            # the text layer has no space between them (tables drawn cell by cell).
            if gap > 0.25 * max(size, 1.0) or gap < -max(size, 1.0) or abs(y1 - prev[4]) > size:
                flush()
        chars.append((char, x0, y0, x1, y1, size, bold))
    flush()
    return PageLayout(
        width=max(width, 1.0), height=max(height, 1.0), spans=spans_from_words(_sane(words))
    )


def _sane(words: Iterable[Word]) -> list[Word]:
    """Words with a box of some size, font sizes of at least a point (a zero from a broken
    font would make every gap wide)."""
    out = []
    for w in words:
        if w.x1 < w.x0 or w.y1 < w.y0:
            continue
        size = w.size if w.size >= 1 else max(w.y1 - w.y0, 1.0)
        out.append(Word(w.text, w.x0, w.y0, w.x1, w.y1, size, w.bold))
    return out


def lines_of(spans: Sequence[Span]) -> list[list[Span]]:
    """Spans grouped into visual lines (vertical centres within half a line's height), top
    down, each line left to right: how a reader takes in a row of cells."""
    lines: list[list[Span]] = []
    for span in sorted(spans, key=lambda s: ((s.y0 + s.y1) / 2, s.x0)):
        if lines:
            last = lines[-1][-1]
            height = max(last.y1 - last.y0, span.y1 - span.y0, 1.0)
            if abs((last.y0 + last.y1) / 2 - (span.y0 + span.y1) / 2) < height / 2:
                lines[-1].append(span)
                continue
        lines.append([span])
    return [sorted(line, key=lambda s: s.x0) for line in lines]
