"""OCR character error rate and offline-extractor field accuracy on the sample tenders.

    python -m benchmarks.ocr_quality [--dpi 300] [--parallel N]

Each page goes through the same engine as the `ocr` stage (text layer when present, else a
300 dpi render through tesseract in a killable child), then the offline extractor reads the
joined text as the `extract` stage would. Prints a Markdown table for the README.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
from rapidfuzz.distance import Levenshtein

from pg_pipeline_documents.extract_offline import extract_offline
from pg_pipeline_documents.ocr_engine import PageText, ocr_page

SAMPLES = Path(__file__).resolve().parents[1] / "sample_docs"


def normalise(text: str) -> str:
    """Whitespace is layout, not content: runs of it count as one space."""
    return " ".join(text.split())


def cer(hypothesis: str, reference: str) -> float:
    """Character error rate: edit distance over the reference's length, both normalised."""
    ref = normalise(reference)
    return Levenshtein.distance(normalise(hypothesis), ref) / max(1, len(ref))


def missed_fields(found: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """Names of the expected fields the extractor did not get exactly right."""
    return [name for name, value in expected.items() if found.get(name) != value]


@dataclass(frozen=True)
class SampleResult:
    name: str
    pages: list[PageText]
    page_cer: list[float]
    doc_cer: float
    missed: list[str]
    fields: int


def measure(pdf: Path, dpi: int, pool: ThreadPoolExecutor) -> SampleResult:
    truth = json.loads((SAMPLES / "ground_truth" / f"{pdf.stem}.json").read_text("utf-8"))
    count = len(pdfium.PdfDocument(pdf))
    pages = list(pool.map(lambda i: ocr_page(pdf, i, dpi=dpi), range(count)))
    texts = [p.text for p in pages]
    found = extract_offline("\n".join(texts)).model_dump(mode="json")
    return SampleResult(
        name=pdf.name,
        pages=pages,
        page_cer=[cer(t, r) for t, r in zip(texts, truth["pages"], strict=True)],
        doc_cer=cer("\n".join(texts), "\n".join(truth["pages"])),
        missed=missed_fields(found, truth["fields"]),
        fields=len(truth["fields"]),
    )


def table(results: Sequence[SampleResult]) -> str:
    rows = [
        "| sample | pages (OCR'd) | CER per page | CER document | fields right |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        ocrd = sum(p.method == "ocr" for p in r.pages)
        per_page = ", ".join(
            f"{c:.2%}" if p.method == "ocr" else p.method.replace("_", " ")
            for p, c in zip(r.pages, r.page_cer, strict=True)
        )
        rows.append(
            f"| `{r.name}` | {len(r.pages)} ({ocrd}) | {per_page} | {r.doc_cer:.2%} "
            f"| {r.fields - len(r.missed)}/{r.fields} |"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dpi", type=int, default=300)
    parser.add_argument("--parallel", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args(argv)
    with ThreadPoolExecutor(args.parallel) as pool:
        results = [measure(pdf, args.dpi, pool) for pdf in sorted(SAMPLES.glob("*.pdf"))]
    print(table(results))
    for r in results:
        if r.missed:
            print(f"{r.name}: missed {', '.join(r.missed)}")


if __name__ == "__main__":
    main()
