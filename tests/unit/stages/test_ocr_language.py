"""Which language a document's scanned pages are read in: told from its text layer or from a
first pass, against real tesseract with English, French and German data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pg_pipeline_documents import ocr_language
from pg_pipeline_documents.checks import languages_check
from pg_pipeline_documents.ocr import fork_server
from pg_pipeline_documents.ocr_engine import PageText, ocr_page
from pg_pipeline_documents.ocr_language import document_language, guess_language
from pg_pipeline_documents.pdfinfo import inspect_pdf
from tests.support.pdfs import (
    ENGLISH_NOTICE,
    FRENCH_NOTICE,
    GERMAN_NOTICE,
    scanned_pdf,
    write_pdf,
)

#: Each notice and the language it is in.
NOTICES = [(ENGLISH_NOTICE, "eng"), (FRENCH_NOTICE, "fra"), (GERMAN_NOTICE, "deu")]


@pytest.fixture(autouse=True)
def _fork_servers_stopped() -> Iterator[None]:
    yield
    fork_server.stop_fork_servers()


def text_layer(path: Path, text: str) -> Path:
    """A page with ``text`` in Helvetica (WinAnsi, so accents are Latin-1 bytes), line by line."""
    lines = [line.replace("\\", "").replace("(", "").replace(")", "") for line in text.split("\n")]
    shown = b" ".join(b"(%s) Tj 0 -14 Td" % line.encode("latin-1") for line in lines)
    content = b"BT /F1 10 Tf 72 720 Td " + shown + b" ET"
    return write_pdf(
        path,
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
            b" /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
            b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        ],
    )


@pytest.mark.parametrize(("text", "lang"), NOTICES)
def test_a_text_in_english_french_or_german_is_told_by_its_short_words(
    text: str, lang: str
) -> None:
    assert guess_language(text) == lang
    # As English's model reads a French or German page: without its accents.
    assert guess_language(text.replace("à", "a").replace("ü", "u").replace("é", "e")) == lang


def test_too_few_words_or_no_clear_lead_tell_no_language() -> None:
    assert guess_language("Lot 3 - 45 000 EUR") is None
    mixed = ENGLISH_NOTICE.split("\n")[0] + "\n" + FRENCH_NOTICE.split("\n")[1]
    assert guess_language(mixed) is None
    assert guess_language("") is None


def test_a_documents_text_layer_tells_its_language_without_reading_a_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdf = text_layer(tmp_path / "avis.pdf", FRENCH_NOTICE)

    def no_first_pass(*args: object, **kwargs: object) -> object:
        raise AssertionError("a page was read to tell the language")

    monkeypatch.setattr(ocr_language, "ocr_page", no_first_pass)
    monkeypatch.setattr(ocr_language, "installed_languages", lambda: frozenset({"eng", "fra"}))
    info = inspect_pdf(pdf, sample_chars=ocr_language.SAMPLE_CHARS)

    assert "marché" in info.text_sample
    assert document_language(pdf, info.text_sample, info.page_count) == "fra"


def record_looks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The band of each page the first pass reads (None: the whole page)."""
    looks: list[object] = []

    def looking(*args: Any, **kwargs: Any) -> PageText:
        looks.append(kwargs.get("band"))
        return ocr_page(*args, **kwargs)

    monkeypatch.setattr(ocr_language, "ocr_page", looking)
    return looks


@pytest.mark.parametrize(("text", "lang"), NOTICES)
def test_a_scanned_document_is_read_in_the_language_a_first_pass_tells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, lang: str
) -> None:
    pdf = scanned_pdf(tmp_path / "scan.pdf", text)
    info = inspect_pdf(pdf, sample_chars=ocr_language.SAMPLE_CHARS)
    looks = record_looks(monkeypatch)

    assert info.text_sample.strip() == ""
    assert document_language(pdf, info.text_sample, info.page_count) == lang
    # Five lines at the top of the page: the band below them shows nothing, the page tells.
    assert looks == [ocr_language.DETECT_BAND, None]


@pytest.mark.parametrize(("text", "lang"), NOTICES)
def test_a_page_full_of_text_is_told_by_a_band_of_it_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, lang: str
) -> None:
    pdf = scanned_pdf(tmp_path / "scan.pdf", "\n".join([text] * 6))
    looks = record_looks(monkeypatch)

    assert document_language(pdf, "", 1) == lang
    assert looks == [ocr_language.DETECT_BAND]


@pytest.mark.parametrize(
    ("text", "lang", "words"),
    [
        (FRENCH_NOTICE, "fra", ["PUBLIC À LA", "2027 à 12 heures", "Procédure", "durée"]),
        (GERMAN_NOTICE, "deu", ["Straßenreinigung", "öffentlichen", "für", "Qualität"]),
    ],
)
def test_a_page_read_in_its_own_language_keeps_its_accents(
    tmp_path: Path, text: str, lang: str, words: list[str]
) -> None:
    pdf = scanned_pdf(tmp_path / "scan.pdf", text)

    own = ocr_page(pdf, 0, lang=lang, layout=False).text
    english = ocr_page(pdf, 0, lang="eng", layout=False).text

    assert [word in own for word in words] == [True] * len(words)
    assert sum(word in english for word in words) < len(words)


def test_a_language_without_its_data_falls_back_to_english(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ocr_language, "installed_languages", lambda: frozenset({"eng"}))

    assert document_language(tmp_path / "unused.pdf", GERMAN_NOTICE, 1) == "eng"


def test_the_doctor_says_which_languages_scans_can_be_read_in() -> None:
    name, ok, said = languages_check(frozenset({"eng", "fra", "deu", "osd"}))
    assert (name, ok) == ("tesseract langs", True)
    assert said.startswith("deu, eng, fra:")

    ok, said = languages_check(frozenset({"eng", "osd"}))[1:]
    assert ok  # English alone still reads every document, French and German ones worse
    assert "deu, fra are read as English" in said and "tesseract-ocr-deu tesseract-ocr-fra" in said

    ok, said = languages_check(frozenset({"fra"}))[1:]
    assert not ok and "tesseract-ocr-eng" in said
