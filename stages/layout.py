"""A page's words with where they stand: what the extractor reads beside the plain text.

The OCR stage fills it from the PDF's text layer (PDFium's character boxes and font sizes) or
from tesseract's word boxes on a scan; the extractor pairs labels with values side by side,
below and in table cells, and finds the title by its size and place.
"""

from __future__ import annotations

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
