"""A page in grey pixels: the resolution it fits at, its render, its ink, its PGM file, and a
region of it as PNG."""

from __future__ import annotations

import math
import struct
import zlib
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


def png_bytes(grey: Grey, outline: tuple[int, int, int, int] | None = None) -> bytes:
    """The grey pixels as an 8-bit greyscale PNG (the standard library's zlib: no Pillow in
    here), with ``outline`` (x0, y0, x1, y1 in pixels) drawn as a 2-pixel black frame."""
    width, height, stride = grey.width, grey.height, grey.stride
    source = memoryview(grey.buffer).cast("B")
    rows = [bytearray(source[y * stride : y * stride + width]) for y in range(height)]
    if outline is not None:
        x0, y0, x1, y1 = outline
        x0, x1 = max(0, min(x0 - 3, width - 1)), max(0, min(x1 + 3, width - 1))
        y0, y1 = max(0, min(y0 - 3, height - 1)), max(0, min(y1 + 3, height - 1))
        for y in range(y0, y1 + 1):
            row = rows[y]
            if y - y0 < 2 or y1 - y < 2:
                row[x0 : x1 + 1] = bytes(x1 + 1 - x0)
            else:
                for x in (x0, x0 + 1, x1 - 1, x1):
                    row[x] = 0
    raw = b"".join(b"\x00" + bytes(row) for row in rows)  # filter type 0 (none) per row

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grey
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )
