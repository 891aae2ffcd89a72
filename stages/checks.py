"""What `pipeline doctor` checks for the document stages."""

from __future__ import annotations

import subprocess

from stages.ocr_engine import tesseract_available


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
    ]
