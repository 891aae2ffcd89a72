"""What reading scans in more languages costs on English pages, and what telling a document's
language costs at upload.

    python -m benchmarks.ocr_languages [--rounds 3] [--langs eng eng+fra+deu] [--decisions-only]

Every scanned page of the sample tenders (English) is read in each of ``--langs``, the order
alternating from round to round so that the machine's drift falls on all of them alike.
Reports, per language setting, the median time per page, the median of the per-page
differences with the first setting, and the character error rate against the ground truth.
Then each scanned sample goes through the upload stage's language decision
(:func:`pg_pipeline_documents.ocr_language.document_language`: its first pass over a band of page 1
at
150 dpi), timed against reading that page whole.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from benchmarks.ocr_quality import cer
from pg_pipeline_documents.ocr.fork_server import stop_fork_servers
from pg_pipeline_documents.ocr_engine import ocr_page
from pg_pipeline_documents.ocr_language import SAMPLE_CHARS, document_language
from pg_pipeline_documents.pdfinfo import inspect_pdf

SAMPLES = Path(__file__).resolve().parents[1] / "sample_docs"


def scanned_pages() -> list[tuple[Path, int, str]]:
    """(pdf, page index, the page's true text) of every page read by OCR in the samples."""
    found = []
    for pdf in sorted(SAMPLES.glob("scanned_*.pdf")):
        truth = json.loads((SAMPLES / "ground_truth" / f"{pdf.stem}.json").read_text("utf-8"))
        found += [(pdf, index, text) for index, text in enumerate(truth["pages"])]
    return found


def measure(langs: list[str], rounds: int) -> str:
    pages = scanned_pages()
    seconds: dict[str, list[float]] = defaultdict(list)
    extra: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, list[float]] = defaultdict(list)
    for lang in langs:  # each language's model loaded in the fork server, outside the timings
        ocr_page(pages[0][0], pages[0][1], lang=lang, layout=False)
    for round_ in range(rounds):
        for n, (pdf, index, truth) in enumerate(pages):
            order = langs if (round_ + n) % 2 == 0 else list(reversed(langs))
            took = {}
            for lang in order:
                start = time.perf_counter()
                page = ocr_page(pdf, index, lang=lang, layout=False)
                took[lang] = time.perf_counter() - start
                if round_ == 0:
                    errors[lang].append(cer(page.text, truth))
            for lang in langs:
                seconds[lang].append(took[lang])
                extra[lang].append(took[lang] - took[langs[0]])
    lines = [
        f"| language setting | pages x rounds | time a page | difference with {langs[0]} "
        "(median of pairs) | character error rate (mean) |",
        "|---|---|---|---|---|",
    ]
    for lang in langs:
        lines.append(
            f"| {lang} | {len(pages)} x {rounds} | {statistics.median(seconds[lang]):.2f} s "
            f"| {statistics.median(extra[lang]) * 1000:+.0f} ms "
            f"({statistics.median(extra[lang]) / statistics.median(seconds[langs[0]]):+.0%}) "
            f"| {statistics.mean(errors[lang]):.2%} |"
        )
    return "\n".join(lines)


def decisions(rounds: int) -> str:
    """Each scanned sample's decision, timed against reading its first page whole (300 dpi,
    English), the two alternating which goes first."""
    lines = [
        "| document | decided | time to decide | time to read page 1 | decide / read |",
        "|---|---|---|---|---|",
    ]
    for pdf in sorted(SAMPLES.glob("scanned_*.pdf")):
        info = inspect_pdf(pdf, sample_chars=SAMPLE_CHARS)
        decide, read, decided = [], [], set()
        for round_ in range(rounds):
            for step in ("decide", "read") if round_ % 2 == 0 else ("read", "decide"):
                start = time.perf_counter()
                if step == "decide":
                    decided.add(document_language(pdf, info.text_sample, info.page_count))
                    decide.append(time.perf_counter() - start)
                else:
                    ocr_page(pdf, 0, lang="eng", layout=False)
                    read.append(time.perf_counter() - start)
        d, r = statistics.median(decide), statistics.median(read)
        lines.append(
            f"| {pdf.name} | {', '.join(sorted(decided))} | {d:.2f} s | {r:.2f} s | {d / r:.0%} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--langs", nargs="+", default=["eng", "eng+fra+deu"])
    parser.add_argument(
        "--decisions-only", action="store_true", help="time only the upload stage's decision"
    )
    args = parser.parse_args(argv)
    try:
        if not args.decisions_only:
            print(measure(args.langs, args.rounds))
            print()
        print(decisions(args.rounds))
    finally:
        stop_fork_servers()


if __name__ == "__main__":
    main()
