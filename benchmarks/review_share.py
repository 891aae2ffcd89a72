"""How many documents would wait for review, and for which fields, at each confidence threshold.

    python -m benchmarks.review_share [--threshold T ...] [--required FIELD ...] [--no-corpus]

Every document of the generated corpus (sample_docs/corpus and the five samples) and, when they
are there, the real publishers' documents (``../shared/realworld/dev`` or
``PIPELINE_REALWORLD_DIR``), read as the `ocr` stage reads them and extracted as the `extract`
stage does, then asked what the `review` stage would ask (pg_pipeline_documents.review): per
threshold, the documents that would wait, the fields asked about, and how many of the values
that are wrong or missing (against the ground truth) would be asked about.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pypdfium2 as pdfium

from benchmarks import extraction_realworld as realworld
from benchmarks.extraction_accuracy import (
    CORPUS,
    SAMPLES,
    extract_pages,
    language_of,
    load_truth,
    score,
)
from pg_pipeline_documents.layout import PageLayout
from pg_pipeline_documents.ocr_engine import ocr_page
from pg_pipeline_documents.review import ReviewSettings, needs_review
from pg_pipeline_documents.tender import TenderExtraction, TenderFields

#: (document, extraction, outcome per field: right, wrong or missing) of one set
Scored = list[tuple[str, TenderExtraction, dict[str, str]]]


def corpus(parallel: int) -> Scored:
    pdfs = sorted(CORPUS.glob("*.pdf")) + sorted(SAMPLES.glob("*.pdf"))

    def one(pdf: Path) -> tuple[str, TenderExtraction, dict[str, str]]:
        doc = pdfium.PdfDocument(pdf)
        count = len(doc)
        doc.close()
        lang = language_of(pdf)
        pages = [ocr_page(pdf, i, lang=lang) for i in range(count)]
        found = extract_pages([p.text for p in pages], [p.layout for p in pages])
        truth = TenderFields.model_validate(load_truth(pdf)["fields"])
        outcomes: dict[str, str] = dict(score(found.fields(), truth))
        return pdf.name, found, outcomes

    with ThreadPoolExecutor(parallel) as pool:
        return list(pool.map(one, pdfs))


def real_documents() -> Scored | None:
    found: list[TenderExtraction] = []

    def extract(pages: list[str], layouts: list[PageLayout | None]) -> TenderExtraction:
        result = extract_pages(pages, layouts)
        found.append(result)
        return result

    verdicts = realworld.measure(extract, layouts_from_text_layer=False)
    if verdicts is None:
        return None
    # measure() extracts the documents in the order of their names, each once.
    names = sorted({v.name for v in verdicts})
    out: Scored = []
    for name, extraction in zip(names, found, strict=True):
        out.append((name, extraction, {v.field: v.outcome for v in verdicts if v.name == name}))
    return out


def table(
    sets: Sequence[tuple[str, Scored]], thresholds: Sequence[float], required: list[str]
) -> str:
    heads = [
        f"{name}: documents waiting / fields asked / wrong or missing asked" for name, _ in sets
    ]
    rows = ["| threshold | " + " | ".join(heads) + " |", "|---|" + "---|" * len(sets)]
    for threshold in thresholds:
        settings = ReviewSettings(threshold=threshold, required=required)
        cells = []
        for _, scored in sets:
            asked = [needs_review(found, settings) for _, found, _ in scored]
            bad = [
                (i, f) for i, (_, _, o) in enumerate(scored) for f, v in o.items() if v != "right"
            ]
            caught = sum(f in asked[i] for i, f in bad)
            cells.append(
                f"{sum(bool(a) for a in asked)}/{len(scored)} / {sum(map(len, asked))} / "
                f"{caught}/{len(bad)}"
            )
        rows.append(f"| {threshold:g} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--threshold", type=float, action="append")
    parser.add_argument("--required", action="append", default=[])
    parser.add_argument("--no-corpus", action="store_true")
    parser.add_argument("--parallel", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args(argv)
    sets: list[tuple[str, Scored]] = []
    real = real_documents()
    if real is not None:
        sets.append(("real documents", real))
    else:
        print(f"realworld: {realworld.realworld_dir()} is not there: not measured")
    if not args.no_corpus:
        sets.append(("corpus", corpus(args.parallel)))
    print(table(sets, args.threshold or [0.5, 0.6, 0.7, 0.75, 0.8, 0.9], args.required))


if __name__ == "__main__":
    main()
