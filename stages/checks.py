"""What `pipeline doctor` checks for the document stages."""

from __future__ import annotations

from pg_pipeline import MissingExtra, require_extra
from pg_pipeline_documents.ocr_engine import tesseract_available, tesseract_library
from pg_pipeline_documents.ocr_language import DEFAULT_LANGUAGE, FUNCTION_WORDS, installed_languages


def checks() -> list[tuple[str, bool, str]]:
    try:
        require_extra("documents", "the documents app")
    except MissingExtra as exc:
        return [("documents", False, str(exc))]
    version = tesseract_available()
    if version is None:
        return [
            (
                "tesseract",
                False,
                "not found: apt-get install tesseract-ocr tesseract-ocr-eng "
                "(macOS: brew install tesseract)",
            )
        ]
    return [
        ("tesseract", True, f"version {version}"),
        languages_check(installed_languages()),
        library_check(tesseract_library()),
    ]


def languages_check(installed: frozenset[str]) -> tuple[str, bool, str]:
    """Which languages scanned pages can be read in. English is needed; a document in another
    known language without its data is read in English (worse, never a failure)."""
    have = ", ".join(sorted(installed - {"osd"})) or "none"
    if DEFAULT_LANGUAGE not in installed:
        return ("tesseract langs", False, f"{have}; missing: apt-get install tesseract-ocr-eng")
    missing = sorted(set(FUNCTION_WORDS) - installed)
    if missing:
        packages = " ".join(f"tesseract-ocr-{lang}" for lang in missing)
        return (
            "tesseract langs",
            True,
            f"{have}; documents in {', '.join(missing)} are read as English: "
            f"apt-get install {packages}",
        )
    return ("tesseract langs", True, f"{have}: documents are read in their own language")


def library_check(library: str | None) -> tuple[str, bool, str]:
    """Where pages are read. Without the library OCR still works, through the command, so
    this never fails the doctor; it says what that costs."""
    if library is None:
        return (
            "tesseract lib",
            True,
            "not found: each page runs the tesseract command (~150 ms more CPU a page); "
            "install libtesseract (Debian: libtesseract5) to read pages in-process",
        )
    return ("tesseract lib", True, f"{library}: pages are read in-process")
