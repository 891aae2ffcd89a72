"""Layout: lines, label/value pairs, ruled tables and two-column blocks on A4 pages."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from make_samples import (
    BOTTOM_Y,
    MARGIN_L,
    PAGE_W,
    TEXT_W,
    TOP_Y,
    WIDTHS,
    FontName,
    Page,
    Run,
)


def char_width(ch: str, font: FontName) -> int:
    table = WIDTHS[font]
    if ch in table:
        return table[ch]
    base = unicodedata.normalize("NFKD", ch)[:1]
    return table.get(base, 556)


def width(text: str, font: FontName, size: float) -> float:
    return sum(char_width(c, font) for c in text) * size / 1000.0


def wrap(text: str, font: FontName, size: float, limit: float) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if current and width(candidate, font, size) > limit:
            lines.append(current)
            current = word
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines


@dataclass
class Doc:
    header: str
    size: float = 10.0
    lead: float = 13.4
    pages: list[Page] = field(default_factory=list)
    y: float = 0.0
    footer: str = "Page {n}/{total}"

    def _page(self) -> Page:
        if not self.pages or self.y < BOTTOM_Y + self.lead:
            self.pages.append(Page())
            page = self.pages[-1]
            page.runs.append(Run(self.header, "F1", 8.0, MARGIN_L, TOP_Y + 18, 0.3))
            page.lines.append(self.header)
            self.y = TOP_Y
        return self.pages[-1]

    def room(self, lines: int) -> None:
        if self.pages and self.y - lines * self.lead < BOTTOM_Y:
            self.y = 0.0

    def line(self, text: str, font: FontName = "F1", x: float = MARGIN_L) -> None:
        page = self._page()
        page.runs.append(Run(text, font, self.size, x, self.y))
        page.lines.append(text)
        self.y -= self.lead

    def para(self, text: str, font: FontName = "F1", indent: float = 0.0) -> None:
        for part in wrap(text, font, self.size, TEXT_W - indent):
            self.line(part, font, MARGIN_L + indent)

    def gap(self) -> None:
        self.y -= self.lead * 0.5

    def kv(self, label: str, value: str) -> None:
        """Label and value on one line (wrapped as one paragraph)."""
        self.para(f"{label} {value}")

    def above(self, label: str, value: str) -> None:
        """Label in bold, value on the line(s) below it."""
        self.room(2)
        self.line(label, "F2")
        self.para(value)

    def table(self, widths: Sequence[float], rows: Sequence[Sequence[str]]) -> None:
        """A ruled table, first row bold; every cell must fit on one line."""
        self.room(len(rows) + 1)
        page = self._page()
        xs = [MARGIN_L]
        for w in widths:
            xs.append(xs[-1] + w)
        top = self.y + self.lead * 0.75
        for r, row in enumerate(rows):
            font: FontName = "F2" if r == 0 else "F1"
            for cell, x, w in zip(row, xs[:-1], widths, strict=True):
                assert width(cell, font, self.size) < w - 6, cell
                page.runs.append(Run(cell, font, self.size, x + 3, self.y))
            page.lines.append(" ".join(c for c in row if c))
            page.rules.append((xs[0], top - r * self.lead, xs[-1], top - r * self.lead))
            self.y -= self.lead
        bottom = top - len(rows) * self.lead
        page.rules.append((xs[0], bottom, xs[-1], bottom))
        page.rules.extend((x, top, x, bottom) for x in xs)
        self.y -= self.lead * 0.5

    def rows(self, widths: Sequence[float], rows: Sequence[Sequence[str]]) -> None:
        """A ruled table without a header row; a cell too wide wraps onto more lines."""
        page = self._page()
        xs = [MARGIN_L]
        for w in widths:
            xs.append(xs[-1] + w)
        wrapped = [
            [wrap(c, "F1", self.size, w - 6) or [""] for c, w in zip(row, widths, strict=True)]
            for row in rows
        ]
        self.room(sum(max(len(c) for c in row) for row in wrapped) + 1)
        page = self._page()
        top = self.y + self.lead * 0.75
        for row in wrapped:
            height = max(len(c) for c in row)
            page.rules.append((xs[0], self.y + self.lead * 0.75, xs[-1], self.y + self.lead * 0.75))
            for k in range(height):
                parts = [c[k] for c in row if k < len(c) and c[k]]
                for cell, x in zip(row, xs[:-1], strict=True):
                    if k < len(cell) and cell[k]:
                        page.runs.append(Run(cell[k], "F1", self.size, x + 3, self.y))
                page.lines.append(" ".join(parts))
                self.y -= self.lead
        bottom = self.y + self.lead * 0.75
        page.rules.append((xs[0], bottom, xs[-1], bottom))
        page.rules.extend((x, top, x, bottom) for x in xs)
        self.y -= self.lead * 0.5

    def grid(self, label: str, value: str, label_w: float = 190.0) -> None:
        """Label in a left column, value beside it; both wrap within their column, no rules."""
        left = wrap(label, "F2", self.size, label_w - 8) or [""]
        right = wrap(value, "F1", self.size, TEXT_W - label_w) or [""]
        self.room(max(len(left), len(right)))
        page = self._page()
        for k in range(max(len(left), len(right))):
            parts = []
            if k < len(left):
                page.runs.append(Run(left[k], "F2", self.size, MARGIN_L, self.y))
                parts.append(left[k])
            if k < len(right):
                page.runs.append(Run(right[k], "F1", self.size, MARGIN_L + label_w, self.y))
                parts.append(right[k])
            page.lines.append(" ".join(parts))
            self.y -= self.lead

    def columns(
        self, left: Sequence[tuple[str, FontName]], right: Sequence[tuple[str, FontName]]
    ) -> None:
        """Two columns drawn row by row (as many generators do); read column by column."""
        half = TEXT_W / 2 - 10
        wl = [(t, f) for text, f in left for t in wrap(text, f, self.size, half)]
        wr = [(t, f) for text, f in right for t in wrap(text, f, self.size, half)]
        rows = max(len(wl), len(wr))
        self.room(rows)
        page = self._page()
        for r in range(rows):
            for col, x in ((wl, MARGIN_L), (wr, MARGIN_L + TEXT_W / 2 + 10)):
                if r < len(col):
                    page.runs.append(
                        Run(col[r][0], col[r][1], self.size, x, self.y - r * self.lead)
                    )
        page.lines.extend(t for t, _ in wl)
        page.lines.extend(t for t, _ in wr)
        self.y -= rows * self.lead + self.lead * 0.5

    def finish(self) -> list[Page]:
        for n, page in enumerate(self.pages, start=1):
            footer = self.footer.format(n=n, total=len(self.pages))
            page.runs.append(Run(footer, "F1", 8.0, PAGE_W / 2 - 14, 40.0, 0.3))
            page.lines.append(footer)
        return self.pages
