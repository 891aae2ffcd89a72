"""A text layer's layout, in the child: the extractor's own reader of PDFium's characters
(:func:`layout.layout_from_textpage`, the one way words become spans), placed as the page
is displayed (its crop box's corner the origin, its /Rotate applied) and in reading order.

That reader reads lines as they run along the PDF's own x axis: text drawn turned within the
page (a landscape table set sideways on a portrait page) comes out a word to a span.

``layout`` brings pydantic: the fork server imports it once, before it forks, so that a
child does not pay for it.
"""

from __future__ import annotations

from typing import Any

from pg_pipeline_documents.ocr.reading_order import in_reading_order


def text_layer_layout(page: Any, textpage: Any) -> dict[str, Any]:
    """The page's layout as a child reports it: ``{"width", "height", "spans": [...]}`` in
    points from the displayed page's top-left corner (:class:`layout.PageLayout`'s
    fields)."""
    from pg_pipeline_documents.layout import layout_from_textpage

    left, bottom, right, top = page.get_cropbox()
    built = layout_from_textpage(textpage, right - left, top - bottom, origin=(left, bottom))
    width, height = page.get_size()
    turn = page.get_rotation() % 360
    shown = [
        span.model_copy(update=_turned(span, built.width, built.height, turn))
        for span in built.spans
    ]
    return {
        "width": width,
        "height": height,
        "spans": [span.model_dump() for span in in_reading_order(shown, width, height)],
    }


def _turned(span: Any, width: float, height: float, turn: int) -> dict[str, float]:
    """The box of ``span`` (from the top-left corner of the unrotated ``width`` x ``height``
    box) on the page as displayed, turned clockwise by ``turn`` degrees."""
    corners = [(span.x0, span.y0), (span.x1, span.y1)]
    if turn == 90:
        points = [(height - y, x) for x, y in corners]
    elif turn == 180:
        points = [(width - x, height - y) for x, y in corners]
    elif turn == 270:
        points = [(y, width - x) for x, y in corners]
    else:
        points = corners
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return {"x0": min(xs), "y0": min(ys), "x1": max(xs), "y1": max(ys)}
