"""Where the checkout is, for tests that read its files (schema, samples, sources)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
