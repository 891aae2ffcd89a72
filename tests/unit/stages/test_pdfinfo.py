"""inspect_pdf on real files written into tmp_path: valid, empty, oversized, foreign, encrypted,
truncated, page-less and too long. PDFium parses them in a child process; no mocks."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pg_pipeline_documents.errors import DocumentError
from pg_pipeline_documents.pdfinfo import PdfInfo, inspect_pdf
from tests.support.pdfs import encrypted_pdf, image_pdf, pageless_pdf, text_objects, write_pdf


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
    pdf = encrypted_pdf(tmp_path / "locked.pdf")
    with pytest.raises(DocumentError, match=r"^PDF is encrypted \(password protected\)$"):
        inspect_pdf(pdf)


def test_truncated_pdf(tmp_path: Path) -> None:
    data = image_pdf(tmp_path / "scan.pdf").read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(DocumentError, match=r"^PDF is damaged or truncated: "):
        inspect_pdf(cut)


def test_pdf_without_pages(tmp_path: Path) -> None:
    pdf = pageless_pdf(tmp_path / "nothing.pdf")
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
