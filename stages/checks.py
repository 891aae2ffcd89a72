"""What `pipeline doctor` checks for the document stages."""

from __future__ import annotations

import subprocess

from stages.ocr_engine import tesseract_available, tesseract_library


def checks() -> list[tuple[str, bool, str]]:
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
    langs = subprocess.run(
        ["tesseract", "--list-langs"], capture_output=True, text=True, timeout=30, check=False
    ).stdout.split()
    return [
        ("tesseract", True, f"version {version}"),
        (
            "tesseract eng",
            "eng" in langs,
            "English data installed"
            if "eng" in langs
            else "missing: apt-get install tesseract-ocr-eng",
        ),
        library_check(tesseract_library()),
    ]


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
