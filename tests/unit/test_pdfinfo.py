"""inspect_pdf on real files written into tmp_path: valid, empty, oversized, foreign, encrypted,
truncated, page-less and too long. PDFium parses them in a child process; no mocks."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from stages.errors import DocumentError
from stages.pdfinfo import PdfInfo, inspect_pdf


def write_pdf(path: Path, objects: list[bytes], trailer: bytes = b"") -> Path:
    """A PDF whose object n is objects[n - 1] (object 1 the catalog), with a correct xref."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R %s>>\n" % (len(objects) + 1, trailer)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    path.write_bytes(bytes(out))
    return path


def text_objects(text: bytes) -> list[bytes]:
    content = b"BT /F1 24 Tf 72 700 Td (%s) Tj ET" % text
    return [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
    ]


def image_pdf(path: Path, pages: int = 1) -> Path:
    font = ImageFont.load_default(size=40)
    images = []
    for n in range(pages):
        image = Image.new("L", (1275, 1650), 255)  # letter size at 150 dpi
        ImageDraw.Draw(image).text((100, 100), f"Scanned page {n + 1}", fill=0, font=font)
        images.append(image)
    images[0].save(path, format="PDF", resolution=150, save_all=True, append_images=images[1:])
    return path


def test_valid_pdf_is_described(tmp_path: Path) -> None:
    pdf = image_pdf(tmp_path / "scan.pdf")
    data = pdf.read_bytes()

    info = inspect_pdf(pdf)

    assert info == PdfInfo(
        page_count=1, size_bytes=len(data), sha256=hashlib.sha256(data).hexdigest()
    )


def test_hand_written_text_pdf_is_described(tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "text.pdf", text_objects(b"Hello"))
    assert inspect_pdf(pdf).page_count == 1


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    with pytest.raises(DocumentError, match=r"^file is empty \(0 bytes\)$"):
        inspect_pdf(empty)


def test_file_over_the_size_limit(tmp_path: Path) -> None:
    pdf = image_pdf(tmp_path / "scan.pdf")
    with pytest.raises(DocumentError, match=r"^file is too large: .*the limit is 100 bytes"):
        inspect_pdf(pdf, max_bytes=100)


def test_size_is_checked_before_the_magic_bytes(tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"x" * 1000)
    with pytest.raises(DocumentError, match="too large"):
        inspect_pdf(blob, max_bytes=10)


@pytest.mark.parametrize(
    "data",
    [b"hello, this is plain text", b"PK\x03\x04zipzipzip", b"\n%PDF-1.4 with a leading newline"],
)
def test_not_a_pdf(tmp_path: Path, data: bytes) -> None:
    blob = tmp_path / "blob.pdf"
    blob.write_bytes(data)
    with pytest.raises(DocumentError, match=r"^not a PDF: file does not start with %PDF-$"):
        inspect_pdf(blob)


def test_encrypted_pdf(tmp_path: Path) -> None:
    # Standard security handler with a user password that the empty password does not match:
    # PDFium asks for a password, as it would for any password-protected file.
    encrypt = (
        b"<< /Filter /Standard /V 1 /R 2 /P -4 /O <" + b"11" * 32 + b"> /U <" + b"22" * 32 + b"> >>"
    )
    file_id = b"<" + b"33" * 16 + b">"
    pdf = write_pdf(
        tmp_path / "locked.pdf",
        [*text_objects(b"secret"), encrypt],
        trailer=b"/Encrypt 6 0 R /ID [%s %s] " % (file_id, file_id),
    )
    with pytest.raises(DocumentError, match=r"^PDF is encrypted \(password protected\)$"):
        inspect_pdf(pdf)


def test_truncated_pdf(tmp_path: Path) -> None:
    data = image_pdf(tmp_path / "scan.pdf").read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(DocumentError, match=r"^PDF is damaged or truncated: "):
        inspect_pdf(cut)


def test_pdf_without_pages(tmp_path: Path) -> None:
    pdf = write_pdf(
        tmp_path / "nothing.pdf",
        [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"],
    )
    with pytest.raises(DocumentError, match=r"^PDF has no pages$"):
        inspect_pdf(pdf)


def test_too_many_pages(tmp_path: Path) -> None:
    pdf = image_pdf(tmp_path / "scan.pdf", pages=3)
    assert inspect_pdf(pdf, max_pages=3).page_count == 3
    with pytest.raises(DocumentError, match=r"^PDF has too many pages: 3, the limit is 2$"):
        inspect_pdf(pdf, max_pages=2)


def test_missing_file_is_not_a_document_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        inspect_pdf(tmp_path / "nowhere.pdf")
