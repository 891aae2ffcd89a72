"""The offline extractor on real publishers' documents, scored by their own scorer.

The documents, their ground truth and ``score.py`` live outside the project (their publishers own
them): in ``../shared/realworld/dev`` beside the repository, or wherever
``PIPELINE_REALWORLD_DIR`` points. Nothing is copied; when the directory is missing the
benchmark says so and measures the rest.

Each page goes through the `ocr` stage's engine and the pages (with their layouts, when the
engine gives them) through ``extract_fields`` as the `extract` stage calls it, so the fields are
what ``pipeline submit FILE --wait`` prints on the embedded defaults.

The documents the rules were tuned on and the ones held out are split by a rule fixed before
any tuning: per family (``boamp_fr``, ``ted_de``, ``ted_uk``, the rest), the documents sorted by
name, every third one from the first is held out. Held-out documents are only ever scored.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pypdfium2 as pdfium

from pg_pipeline_documents.layout import PageLayout, layout_from_textpage
from pg_pipeline_documents.ocr_engine import PageText, ocr_page
from pg_pipeline_documents.tender import FieldEvidence, TenderExtraction

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ("boamp_fr", "ted_de", "ted_uk")
#: Fields in the order the real documents' scorer reports them.
FIELDS = (
    "title",
    "issuing_authority",
    "reference",
    "submission_deadline",
    "estimated_value",
    "currency",
    "cpv_codes",
    "lots",
    "contact_email",
)


def realworld_dir() -> Path:
    return Path(os.environ.get("PIPELINE_REALWORLD_DIR") or ROOT.parent / "shared/realworld/dev")


def family(name: str) -> str:
    return next((f for f in FAMILIES if name.startswith(f + "_")), "other")


def held_out(names: Sequence[str]) -> set[str]:
    """Every third document of each family, from the first, by name: fixed before tuning."""
    out: set[str] = set()
    for fam in {family(n) for n in names}:
        members = sorted(n for n in names if family(n) == fam)
        out |= set(members[::3])
    return out


def load_scorer(directory: Path) -> ModuleType:
    """The set's own ``score.py``, read where it lies."""
    spec = importlib.util.spec_from_file_location("realworld_score", directory / "score.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {directory / 'score.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_pages(
    pdf: Path, *, layouts_from_text_layer: bool
) -> tuple[list[str], list[PageLayout | None]]:
    """Each page as the `ocr` stage reads it, and its layout: the one the engine returned, or
    (``layouts_from_text_layer``) one built here from the text layer as the stage would."""
    doc = pdfium.PdfDocument(pdf)
    count = len(doc)
    pages: list[PageText] = [ocr_page(pdf, i) for i in range(count)]
    layouts: list[PageLayout | None] = []
    for i, page in enumerate(pages):
        layout = getattr(page, "layout", None)
        if layout is None and layouts_from_text_layer and page.method == "text_layer":
            pdf_page = doc[i]
            textpage = pdf_page.get_textpage()
            layout = layout_from_textpage(textpage, *pdf_page.get_size())
            textpage.close()
            pdf_page.close()
        layouts.append(layout)
    doc.close()
    return [p.text for p in pages], layouts


@dataclass(frozen=True)
class Verdict:
    name: str
    field: str
    outcome: str  # right | wrong | missing
    confidence: float | None  # the evidence's, for a value the extractor gave


def score_document(
    scorer: ModuleType, name: str, truth: dict[str, Any], got: TenderExtraction
) -> list[Verdict]:
    fields = json.loads(got.fields().model_dump_json())
    out = []
    for field in FIELDS:
        outcome, _detail = scorer.verdict(
            field,
            fields.get(field),
            truth["fields"].get(field),
            truth.get("accept", {}).get(field, []),
        )
        if outcome is None:
            continue
        ev: FieldEvidence | None = got.evidence.get(field)
        confidence = ev.confidence if ev is not None and outcome != "missing" else None
        out.append(Verdict(name, field, outcome, confidence))
    return out


def measure(
    extract: Callable[[list[str], list[PageLayout | None]], TenderExtraction],
    *,
    layouts_from_text_layer: bool,
) -> list[Verdict] | None:
    """Every real document's verdicts, or None when the documents are not there."""
    directory = realworld_dir()
    if not (directory / "ground_truth.json").is_file():
        return None
    scorer = load_scorer(directory)
    truth: dict[str, Any] = json.loads((directory / "ground_truth.json").read_text("utf-8"))
    verdicts: list[Verdict] = []
    for name, entry in sorted(truth.items()):
        if str(entry.get("batch", 1)) != "1":
            continue
        texts, layouts = read_pages(
            directory / "docs" / name, layouts_from_text_layer=layouts_from_text_layer
        )
        verdicts += score_document(scorer, name, entry, extract(texts, layouts))
    return verdicts
