"""A long scanned tender, generated: what `benchmarks.big_scan` sends through the pipeline.

    python -m benchmarks.big_scan_doc OUT.pdf [--pages 400] [--seed 11]

The same seed and page count give the same pages (and, with the same Pillow, zlib and libjpeg,
the same bytes). The document is A4 throughout:

* page 1 is a scanned contract notice (authority, title, reference, deadline, value, CPV codes,
  contact), so the extractor has fields to find at the end of the run;
* most pages are scans in one of four layouts (running prose, two columns, a bill of quantities
  with ruled rows, a form of labelled values), each at 200, 250 or 300 dpi, as 8-bit grey JPEG
  with paper noise or as 1-bit Flate (the two ways office scanners store pages);
* about one page in twenty is blank: a separator sheet with only scanner specks and grey paper;
* a few pages are born-digital annexes with a text layer (Helvetica), which skip OCR.

``PageKind`` per page is returned, so a benchmark knows how many pages of each kind it sent.
"""

from __future__ import annotations

import argparse
import io
import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from PIL import Image, ImageDraw, ImageFont

A4_PT = (595, 842)
FONT_PATHS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSerif-Regular.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
)
Layout = Literal["notice", "prose", "columns", "table", "form", "blank", "text_layer"]

TITLE = "Maintenance and Renewal of Regional Road Bridges 2027-2031"
AUTHORITY = "Eastmarch County Council"
REFERENCE = "ECC/HW/2027/118"
EMAIL = "procurement@eastmarch-county.example"
NOTICE_LINES = [
    f"{AUTHORITY} - Contract notice {REFERENCE}",
    "CONTRACT NOTICE",
    "Open procedure - Works",
    TITLE,
    "Section I: Contracting authority",
    f"Official name: {AUTHORITY}",
    "Postal address: County Hall, 1 Market Square, Eastmarch EM1 4QT",
    f"E-mail: {EMAIL}",
    "Telephone: +44 1632 960 118",
    "Section II: Object",
    f"Title: {TITLE}",
    f"Reference number: {REFERENCE}",
    "Main CPV code: 45221111-3 Road bridge construction work",
    "Additional CPV codes: 45221119-9 Bridge renewal construction work",
    "Type of contract: Works",
    "Estimated total value excluding VAT: GBP 12,400,000.00",
    "Section IV: Procedure",
    "Time limit for receipt of tenders: 15 March 2027, 12:00 (UTC+00:00)",
    "Tenders must be submitted electronically through the county's procurement portal.",
]

_VOCABULARY = (
    "the contractor shall provide all labour plant and materials for the works described in "
    "this specification including inspection repair resurfacing drainage parapets bearings "
    "expansion joints waterproofing traffic management temporary works and reinstatement of "
    "verges the employer may instruct additional works at the rates in the priced schedule "
    "all concrete shall comply with the relevant standard and be placed within two hours of "
    "batching steel reinforcement shall be fixed to the tolerances shown on the drawings "
    "the engineer shall be given seven days notice before any lane closure on a principal road"
)
_WORDS = tuple(_VOCABULARY.split())


@dataclass(frozen=True)
class PageKind:
    number: int  # 1-based
    layout: Layout
    dpi: int | None  # the scan's resolution; None for a text-layer page
    bilevel: bool = False


def plan(pages: int, seed: int) -> list[PageKind]:
    """Which page is what: the same for the same arguments."""
    rng = random.Random(seed)
    text_layer = {2, pages // 4, pages // 2 + 3, pages - 1} if pages >= 8 else set()
    kinds = []
    for number in range(1, pages + 1):
        if number == 1:
            kinds.append(PageKind(1, "notice", 300))
        elif number in text_layer:
            kinds.append(PageKind(number, "text_layer", None))
        elif rng.random() < 0.05:
            kinds.append(PageKind(number, "blank", rng.choice((200, 300))))
        else:
            layout: Layout = rng.choice(("prose", "prose", "columns", "table", "form"))
            kinds.append(
                PageKind(number, layout, rng.choice((200, 250, 300)), bilevel=rng.random() < 0.3)
            )
    return kinds


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _lines(kind: PageKind, rng: random.Random) -> list[str]:
    if kind.layout == "notice":
        return NOTICE_LINES
    if kind.layout == "form":
        labels = ("Item reference", "Location", "Structure type", "Span (m)", "Last inspected")
        lines = [f"Schedule of structures - sheet {kind.number}"]
        for n in range(rng.randint(8, 14)):
            for label in labels:
                value = rng.choice(("EM-", "BR-", "CUL-")) + str(rng.randint(100, 999))
                lines.append(f"{label}: {value} {rng.choice(_WORDS)} {n + 1}")
        return lines
    if kind.layout == "table":
        lines = [f"Bill of quantities - part {kind.number}", "Item | Description | Qty | Rate"]
        for n in range(rng.randint(18, 28)):
            qty, rate = rng.randint(1, 900), rng.randint(5, 4000)
            desc = " ".join(rng.choice(_WORDS) for _ in range(4))
            lines.append(f"{kind.number}.{n + 1} | {desc} | {qty} | {rate}.00")
        return lines
    heading = f"{kind.number}. {_sentence(rng, 5)[:-1].title()}"
    return [heading, *(_sentence(rng, rng.randint(7, 11)) for _ in range(rng.randint(24, 34)))]


def _scan(kind: PageKind, rng: random.Random, fonts: Sequence[str]) -> Image.Image:
    assert kind.dpi is not None
    dpi = kind.dpi
    size = (round(A4_PT[0] * dpi / 72), round(A4_PT[1] * dpi / 72))
    paper = rng.randint(228, 248)
    image = Image.new("L", size, paper)
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(rng.choice(fonts), round(10.5 * dpi / 72))
    margin, pitch = dpi, round(15 * dpi / 72)
    if kind.layout == "columns":
        half = (size[0] - 2 * margin) // 2
        lines = _lines(kind, rng)
        for column in range(2):
            y = margin
            for line in lines[column::2]:
                draw.text((margin + column * (half + dpi // 6), y), line[:45], fill=20, font=font)
                y += pitch
    elif kind.layout != "blank":
        y = margin
        for line in _lines(kind, rng):
            if y > size[1] - margin:
                break
            draw.text((margin, y), line[:95], fill=20, font=font)
            if kind.layout == "table":
                draw.line((margin, y + pitch - 3, size[0] - margin, y + pitch - 3), fill=60)
            y += pitch
    pixels = image.load()
    assert pixels is not None
    for _ in range(rng.randint(200, 2000)):  # specks of dust
        pixels[rng.randrange(size[0]), rng.randrange(size[1])] = rng.randint(0, 140)
    if kind.bilevel:
        return image.point(lambda v: 255 if v > 150 else 0).convert("1")
    return image


class _Pdf:
    """Just enough of a PDF writer: objects in order, an xref table, a trailer."""

    def __init__(self) -> None:
        self.objects: list[bytes] = []

    def add(self, body: bytes) -> int:
        self.objects.append(body)
        return len(self.objects)

    def stream(self, entries: bytes, data: bytes) -> int:
        return self.add(b"<< %s /Length %d >>\nstream\n%s\nendstream" % (entries, len(data), data))

    def write(self, out: io.BufferedIOBase, page_ids: list[int], pages_id: int) -> None:
        kids = b" ".join(b"%d 0 R" % n for n in page_ids)
        self.objects[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
            kids,
            len(page_ids),
        )
        catalog = self.add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
        offsets, position = [], out.write(b"%PDF-1.4\n")
        for number, body in enumerate(self.objects, start=1):
            offsets.append(position)
            position += out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
        out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(self.objects) + 1))
        out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
        out.write(b"trailer\n<< /Size %d /Root %d 0 R >>\n" % (len(self.objects) + 1, catalog))
        out.write(b"startxref\n%d\n%%%%EOF\n" % position)


def _escape(text: str) -> bytes:
    raw = text.encode("latin-1", "replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def make_big_scan(path: Path, pages: int = 400, seed: int = 11) -> list[PageKind]:
    """Write the document to ``path``; returns what each page is."""
    rng = random.Random(seed)
    fonts = [f for f in FONT_PATHS if Path(f).exists()]
    if not fonts:
        raise RuntimeError(f"none of these fonts is installed: {', '.join(FONT_PATHS)}")
    kinds = plan(pages, seed)
    pdf = _Pdf()
    pages_id = pdf.add(b"")  # filled in at the end, once the kids are known
    font_id = pdf.add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    page_ids = []
    box = b"/MediaBox [0 0 %d %d]" % A4_PT
    for kind in kinds:
        if kind.layout == "text_layer":
            ops = [b"BT /F1 10 Tf 72 770 Td 14 TL"]
            ops.append(b"(Annex %d - Conditions of contract) Tj T*" % kind.number)
            for _ in range(40):
                ops.append(b"(%s) Tj T*" % _escape(_sentence(rng, 10)[:90]))
            content = pdf.stream(b"", b"\n".join([*ops, b"ET"]))
            resources = b"<< /Font << /F1 %d 0 R >> >>" % font_id
        else:
            image = _scan(kind, rng, fonts)
            width, height = image.size
            if kind.bilevel:
                data = zlib.compress(image.tobytes(), 6)
                entries = b"/Filter /FlateDecode /BitsPerComponent 1"
            else:
                buffer = io.BytesIO()
                image.save(buffer, format="JPEG", quality=rng.randint(60, 85))
                data = buffer.getvalue()
                entries = b"/Filter /DCTDecode /BitsPerComponent 8"
            xobject = pdf.stream(
                b"/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray %s"
                % (width, height, entries),
                data,
            )
            content = pdf.stream(b"", b"q %d 0 0 %d 0 0 cm /Im0 Do Q" % A4_PT)
            resources = b"<< /XObject << /Im0 %d 0 R >> >>" % xobject
        page_ids.append(
            pdf.add(
                b"<< /Type /Page /Parent %d 0 R %s /Resources %s /Contents %d 0 R >>"
                % (pages_id, box, resources, content)
            )
        )
    with path.open("wb") as out:
        pdf.write(out, page_ids, pages_id)
    return kinds


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path)
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    kinds = make_big_scan(args.out, args.pages, args.seed)
    counts: dict[str, int] = {}
    for kind in kinds:
        counts[kind.layout] = counts.get(kind.layout, 0) + 1
    print(f"{args.out}: {len(kinds)} pages, " + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
