"""What a page's layout costs the `ocr` stage: time per page and bytes stored per page.

    python -m benchmarks.ocr_layout_cost [--rounds 3] [--real-pages 3] [--real-dev DIR]

Every page of the sample tenders (and the first ``--real-pages`` pages of each document of the
real development set, when ``--real-dev``, by default ``../shared/realworld/dev``, is there) is
read by the `ocr` stage's
engine with and without its layout, alternating which goes first from round to round, so that
the machine's drift falls on both sides alike. Reports, per way the page was read (text layer
or OCR), the median time per page each way and the median of the per-page differences, the
stored output's size each way (the `ocr` stage's output as JSON) and the spans per page.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pypdfium2 as pdfium

from pg_pipeline_documents.ocr.fork_server import stop_fork_servers
from pg_pipeline_documents.ocr_engine import PageText, ocr_page

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_docs"
REAL_DEV = ROOT.parent / "shared" / "realworld" / "dev"


@dataclass
class Costs:
    """One way of reading pages (text layer, OCR): what each page cost, with and without."""

    without_s: list[float] = field(default_factory=list)
    with_s: list[float] = field(default_factory=list)
    extra_s: list[float] = field(default_factory=list)
    bytes_without: list[int] = field(default_factory=list)
    bytes_with: list[int] = field(default_factory=list)
    spans: list[int] = field(default_factory=list)


def pages(real_pages: int, real_dev: Path) -> list[tuple[Path, int]]:
    found = [(pdf, i) for pdf in sorted(SAMPLES.glob("*.pdf")) for i in range(_count(pdf))]
    if real_pages > 0:
        if (real_dev / "docs").is_dir():
            for pdf in sorted((real_dev / "docs").glob("*.pdf")):
                found += [(pdf, i) for i in range(min(real_pages, _count(pdf)))]
        else:
            print(f"(no real development set at {real_dev}: sample tenders only)")
    return found


def _count(pdf: Path) -> int:
    doc = pdfium.PdfDocument(pdf)
    try:
        return len(doc)
    finally:
        doc.close()


def _timed(pdf: Path, index: int, layout: bool) -> tuple[float, PageText]:
    start = time.perf_counter()
    page = ocr_page(pdf, index, layout=layout)
    return time.perf_counter() - start, page


def measure(todo: list[tuple[Path, int]], rounds: int) -> dict[str, Costs]:
    costs: dict[str, Costs] = defaultdict(Costs)
    ocr_page(*todo[0])  # the fork server and the language's model, outside the timings
    for round_ in range(rounds):
        for pdf, index in todo:
            order = (False, True) if (round_ + index) % 2 == 0 else (True, False)
            timed = {layout: _timed(pdf, index, layout) for layout in order}
            (plain_s, plain), (laid_s, laid) = timed[False], timed[True]
            if plain.text != laid.text:
                raise AssertionError(f"{pdf.name} page {index + 1}: the layout changed the text")
            cost = costs[laid.method]
            cost.without_s.append(plain_s)
            cost.with_s.append(laid_s)
            cost.extra_s.append(laid_s - plain_s)
            if round_ == 0:
                cost.bytes_without.append(len(plain.model_dump_json()))
                cost.bytes_with.append(len(laid.model_dump_json()))
                cost.spans.append(len(laid.layout.spans) if laid.layout else 0)
    return costs


def report(costs: dict[str, Costs]) -> str:
    lines = [
        "| pages read by | pages | time without layout | with layout | difference "
        "(median of pairs) | output without | with layout | spans a page |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for method, c in sorted(costs.items()):
        median = statistics.median
        lines.append(
            f"| {method} | {len(c.spans)} | {median(c.without_s) * 1000:.0f} ms "
            f"| {median(c.with_s) * 1000:.0f} ms | {median(c.extra_s) * 1000:+.1f} ms "
            f"| {median(c.bytes_without) / 1024:.1f} KiB | {median(c.bytes_with) / 1024:.1f} KiB "
            f"(max {max(c.bytes_with) / 1024:.1f}) | {median(c.spans):.0f} (max {max(c.spans)}) |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--real-pages", type=int, default=3, help="0: sample tenders only")
    parser.add_argument("--real-dev", type=Path, default=REAL_DEV)
    args = parser.parse_args(argv)
    try:
        print(report(measure(pages(args.real_pages, args.real_dev), args.rounds)))
    finally:
        stop_fork_servers()


if __name__ == "__main__":
    main()
