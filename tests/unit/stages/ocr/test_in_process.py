"""Tesseract read in the OCR child's own process (libtesseract), against the tesseract command."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from pg_pipeline_documents import ocr_engine
from pg_pipeline_documents.checks import library_check
from pg_pipeline_documents.ocr import fork_server
from pg_pipeline_documents.ocr_engine import ocr_page

NOTICE = "\n".join(
    [
        "Contract notice 2026/S 123-456789",
        "Tender for the maintenance of district roads",
        "Estimated value: EUR 1,250,000 excluding VAT",
        "Time limit for receipt of tenders: 15 January 2027",
    ]
)


@pytest.fixture(autouse=True)
def _fork_servers_stopped() -> Iterator[None]:
    yield
    fork_server.stop_fork_servers()


@pytest.fixture
def scan(tmp_path: Path) -> Path:
    """An A4 page at 200 dpi that is only an image: no text layer."""
    image = Image.new("L", (1654, 2339), 255)
    font = ImageFont.load_default(size=36)
    ImageDraw.Draw(image).multiline_text((160, 200), NOTICE, fill=0, font=font, spacing=24)
    path = tmp_path / "scan.pdf"
    image.save(path, format="PDF", resolution=200)
    return path


def _without_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ocr_engine, "tesseract_library", lambda: None)


def test_this_machine_has_the_library() -> None:
    # Otherwise every other test here would pass through the command alone.
    assert ocr_engine.tesseract_library() is not None


def test_the_doctor_says_where_pages_are_read_and_never_fails_for_it() -> None:
    name, ok, detail = library_check(None)
    assert (name, ok) == ("tesseract lib", True)
    assert "tesseract command" in detail and "libtesseract" in detail
    found = library_check("/opt/lib/libtesseract.so.5")
    assert found == ("tesseract lib", True, "/opt/lib/libtesseract.so.5: pages are read in-process")


def test_in_process_ocr_reads_what_the_tesseract_command_reads(
    scan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_process = ocr_page(scan, 0, dpi=300)
    _without_library(monkeypatch)
    command = ocr_page(scan, 0, dpi=300)

    assert in_process.method == command.method == "ocr"
    assert "Tender for the maintenance of district roads" in in_process.text
    assert in_process.text == command.text
    assert command.confidence is not None
    assert in_process.confidence == pytest.approx(command.confidence, abs=1e-3)
    assert in_process.dpi == command.dpi == 300


def test_the_fork_server_loads_tesseract_once_and_stays_single_threaded(scan: Path) -> None:
    first = ocr_page(scan, 0, dpi=300)
    second = ocr_page(scan, 0, dpi=300)

    assert first.text == second.text  # the second child's inherited engine starts afresh
    [server] = fork_server.fork_server_pids()
    maps = (Path("/proc") / str(server) / "maps").read_text()
    assert "libtesseract" in maps  # loaded, and its engine made, before the children forked
    # A fork copies one thread only: a server with more would hand its children held locks.
    assert len(list((Path("/proc") / str(server) / "task").iterdir())) == 1


def test_a_spawned_child_reads_the_page_in_its_own_process_too(
    scan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fork_server.SERVERS, "run", lambda *args: None)  # no fork server here

    page = ocr_page(scan, 0, dpi=300)

    assert page.method == "ocr"
    assert "Tender for the maintenance of district roads" in page.text
    assert page.confidence is not None and page.confidence > 60
    assert fork_server.fork_server_pids() == []


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        ("library", r"could not initialize tesseract for language 'zzz'"),
        ("command", r"tesseract could not start"),
    ],
)
def test_missing_language_data_is_the_environments_fault(
    scan: Path, monkeypatch: pytest.MonkeyPatch, engine: str, message: str
) -> None:
    if engine == "command":
        _without_library(monkeypatch)

    # RuntimeError, not DocumentError: the stage retries it while an operator installs the data.
    with pytest.raises(RuntimeError, match=rf"^page 1: .*{message}"):
        ocr_page(scan, 0, dpi=150, lang="zzz")


def test_a_blank_page_never_reaches_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blank = tmp_path / "blank.pdf"
    Image.new("L", (1654, 2339), 255).save(blank, format="PDF", resolution=200)
    # A library that cannot load would fail any page that reached tesseract.
    monkeypatch.setattr(ocr_engine, "tesseract_library", lambda: "/nonexistent/libtesseract.so")

    page = ocr_page(blank, 0, dpi=200)

    assert page.method == "blank"
    assert page.text == ""


def test_a_library_that_cannot_load_fails_retryably_naming_it(
    scan: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ocr_engine, "tesseract_library", lambda: "/nonexistent/libtesseract.so")

    with pytest.raises(RuntimeError, match=r"^page 1: .*cannot load /nonexistent/libtesseract"):
        ocr_page(scan, 0, dpi=150)
