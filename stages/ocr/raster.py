"""A page in grey pixels: the resolution it fits at, its render, its ink, its PGM file."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def fit_dpi(width_pt: float, height_pt: float, dpi: int, max_pixels: int) -> int:
    """The highest dpi <= ``dpi`` at which the page renders to at most ``max_pixels`` (min 1)."""

    def pixels(d: int) -> int:
        scale = d / 72
        return math.ceil(width_pt * scale) * math.ceil(height_pt * scale)

    if pixels(dpi) <= max_pixels:
        return dpi
    fitted = min(dpi - 1, int(72 * math.sqrt(max_pixels / (width_pt * height_pt))))
    while fitted > 1 and pixels(fitted) > max_pixels:
        fitted -= 1
    return max(fitted, 1)


#: An ink block is a square of about 1/75 inch (4 x 4 pixels at 300 dpi) whose mean grey is
#: darker than this: a stroke of text through it makes it one, while a scanner's speck of a pixel
#: or two (or JPEG noise, or a grey background) does not.
INK_BLOCK_GREY = 160
INK_BLOCKS_PER_INCH = 75


def ink_blocks(bitmap: Any, dpi: int) -> int | None:
    """How many ink blocks (:data:`INK_BLOCK_GREY`) an 8-bit grey bitmap holds; None without
    Pillow, which does the counting in C (a Python loop over 8 million pixels would not be
    cheap)."""
    try:
        from PIL import Image
    except ImportError:
        return None
    image = Image.frombuffer(
        "L", (bitmap.width, bitmap.height), bitmap.buffer, "raw", "L", bitmap.stride, 1
    )
    factor = max(1, round(dpi / INK_BLOCKS_PER_INCH))
    return sum(image.reduce(factor).histogram()[:INK_BLOCK_GREY])


@dataclass
class Grey:
    """A rendered page in 8-bit grey: ``stride`` bytes a row, ``height`` rows."""

    buffer: Any  # a writable buffer: PDFium's bitmap, or a bytearray
    width: int
    height: int
    stride: int
    close: Callable[[], None]


def render_grey(
    page: Any, dpi: int, crop: tuple[float, float, float, float] = (0, 0, 0, 0)
) -> Grey:
    """Render the page in 8-bit grey, less ``crop`` points off its (left, bottom, right, top)
    as displayed; the caller closes the result."""
    bitmap = page.render(scale=dpi / 72, grayscale=True, crop=crop)
    if bitmap.n_channels == 1:
        return Grey(bitmap.buffer, bitmap.width, bitmap.height, bitmap.stride, bitmap.close)
    try:  # not expected with grayscale=True; convert to be safe
        image = bitmap.to_pil().convert("L")
    finally:
        bitmap.close()
    return Grey(bytearray(image.tobytes()), image.width, image.height, image.width, lambda: None)


def write_pgm(grey: Grey, path: Path) -> None:
    """Write the page as binary PGM (uncompressed netpbm), for the tesseract command."""
    width, height, stride = grey.width, grey.height, grey.stride
    buffer = memoryview(grey.buffer).cast("B")
    with path.open("wb") as out:
        out.write(b"P5\n%d %d\n255\n" % (width, height))
        if stride == width:
            out.write(buffer[: width * height])
        else:
            for row in range(height):
                out.write(buffer[row * stride : row * stride + width])
