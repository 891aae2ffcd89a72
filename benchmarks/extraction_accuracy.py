"""Field accuracy of the offline extractor on sample_docs/corpus: right, wrong and missing.

    python -m benchmarks.extraction_accuracy [--split SPLIT ...] [--samples]

SPLIT is dev, heldout, fresh, unseen, varied, unseen2 ... unseen7 or all (the default); repeat
--split to measure several. ``unseen2`` to ``unseen7`` use wording pools held out from the
rules, each written before a round of changes and measured once after it (the README says which
rounds changed the rules after their measurement).

Each page goes through the `ocr` stage's engine (text layer when present, else tesseract), the
pages through the offline extractor (as the `extract` stage passes them), and every field is
compared with the ground truth:

* right: equal to the truth (an empty list or null where the truth has none counts as right);
* missing: the extractor said "unknown" (null / empty) where the truth has a value;
* wrong: the extractor gave a value that is not the truth's (including a value where the truth
  has none). Wrong is the expensive outcome: it is counted apart from missing.

Prints Markdown tables for the README: per sample (with CER per OCR'd page), per field and
per split. ``--samples`` also scores the five samples in sample_docs/ (not part of any split).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pypdfium2 as pdfium

from benchmarks.ocr_quality import cer
from stages.extract_offline import extract_offline_explained
from stages.ocr_engine import PageText, ocr_page
from stages.tender import TenderFields

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "sample_docs" / "corpus"
SAMPLES = ROOT / "sample_docs"
FIELDS = list(TenderFields.model_fields)
SPLITS = (
    *("dev", "heldout", "fresh", "unseen", "varied"),
    *("unseen2", "unseen3", "unseen4", "unseen5", "unseen6", "unseen7", "all"),
)

Outcome = Literal["right", "wrong", "missing"]


def score_field(got: Any, expected: Any) -> Outcome:
    """Compare one field's values (as parsed by TenderFields); see the module docstring."""
    if got == expected:
        return "right"
    if got is None or got == []:
        return "missing"
    return "wrong"


def same_codes(got: Sequence[str], expected: Sequence[str]) -> list[str]:
    """The predicted CPV codes, a code reported as its 8-digit stem (as printed, when the
    document prints no check digit) counted as the expected code with that stem, as the real
    documents' scorer counts it; a wrong check digit stays wrong."""
    full = {code[:8]: code for code in expected}
    return [full.get(code, code) if len(code) == 8 else code for code in got]


def score(got: TenderFields, expected: TenderFields) -> dict[str, Outcome]:
    outcomes = {name: score_field(getattr(got, name), getattr(expected, name)) for name in FIELDS}
    outcomes["cpv_codes"] = score_field(
        same_codes(got.cpv_codes, expected.cpv_codes), expected.cpv_codes
    )
    return outcomes


@dataclass(frozen=True)
class Result:
    name: str
    family: str
    split: str
    pages: list[PageText]
    page_cer: list[float]
    outcomes: dict[str, Outcome]

    def count(self, outcome: Outcome) -> int:
        return sum(o == outcome for o in self.outcomes.values())


def load_truth(pdf: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (pdf.parent / "ground_truth" / f"{pdf.stem}.json").read_text()
    )
    return data


def measure(
    pdf: Path, dpi: int, pool: ThreadPoolExecutor, extract: Callable[[list[str]], TenderFields]
) -> Result:
    truth = load_truth(pdf)
    doc = pdfium.PdfDocument(pdf)
    count = len(doc)
    doc.close()
    pages = list(pool.map(lambda i: ocr_page(pdf, i, dpi=dpi), range(count)))
    found = extract([p.text for p in pages])
    return Result(
        name=pdf.name,
        family=truth.get("family", "samples"),
        split=truth.get("split", "samples"),
        pages=pages,
        page_cer=[cer(p.text, t) for p, t in zip(pages, truth["pages"], strict=True)],
        outcomes=score(found, TenderFields.model_validate(truth["fields"])),
    )


def pct(n: int, total: int) -> str:
    return f"{n}/{total} ({n / total:.0%})" if total else "-"


def sample_table(results: Sequence[Result]) -> str:
    rows = [
        "| sample | family | split | right | wrong | missing | wrong / missing fields "
        "| CER per OCR'd page |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        bad = [f"{f} ({o[0]})" for f, o in r.outcomes.items() if o != "right"]
        ocr = [f"{c:.2%}" for p, c in zip(r.pages, r.page_cer, strict=True) if p.method == "ocr"]
        rows.append(
            f"| `{r.name}` | {r.family} | {r.split} | {r.count('right')} | {r.count('wrong')} "
            f"| {r.count('missing')} | {', '.join(bad) or '-'} | {', '.join(ocr) or 'text layer'} |"
        )
    return "\n".join(rows)


def field_table(results: Sequence[Result]) -> str:
    splits = sorted({r.split for r in results})
    head = " | ".join(f"{s}: right / wrong / missing" for s in splits)
    rows = [f"| field | {head} |", "|---|" + "---|" * len(splits)]
    for name in [*FIELDS, "all fields"]:
        cells = []
        for split in splits:
            rs = [r for r in results if r.split == split]
            outcomes = [o for r in rs for f, o in r.outcomes.items() if name in ("all fields", f)]
            n = len(outcomes)
            cells.append(
                " / ".join(
                    pct(sum(o == k for o in outcomes), n) for k in ("right", "wrong", "missing")
                )
            )
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def totals(results: Sequence[Result]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in results:
        t = out.setdefault(r.split, {"right": 0, "wrong": 0, "missing": 0})
        for o in r.outcomes.values():
            t[o] += 1
    return out


def extract_pages(pages: list[str]) -> TenderFields:
    """The extractor as the `extract` stage calls it: with the document's pages in order."""
    return extract_offline_explained(pages).fields()


def load_extractor(path: Path) -> Callable[[list[str]], TenderFields]:
    """``extract_offline(text)`` from an older file, given the pages joined into one text."""
    spec = importlib.util.spec_from_file_location("measured_extractor", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    function: Callable[[str], TenderFields] = module.extract_offline
    return lambda pages: function("\n".join(pages))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--split",
        action="append",
        choices=SPLITS,
        help="measure only this split (repeatable; default: every split)",
    )
    parser.add_argument("--samples", action="store_true", help="also the five sample_docs")
    parser.add_argument("--dpi", type=int, default=300)
    parser.add_argument("--parallel", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--json", type=Path, help="also write the totals as JSON here")
    parser.add_argument(
        "--extractor-file",
        type=Path,
        help="measure extract_offline from this file instead (e.g. an older version, saved "
        "with `git show REV:stages/extract_offline.py > old.py`)",
    )
    args = parser.parse_args(argv)
    extract = extract_pages if args.extractor_file is None else load_extractor(args.extractor_file)
    pdfs = sorted(CORPUS.glob("*.pdf"))
    if args.split and "all" not in args.split:
        pdfs = [p for p in pdfs if load_truth(p)["split"] in args.split]
    if args.samples:
        pdfs += sorted(SAMPLES.glob("*.pdf"))
    with ThreadPoolExecutor(args.parallel) as pool:
        results = [measure(pdf, args.dpi, pool, extract) for pdf in pdfs]
    print(sample_table(results))
    print()
    print(field_table(results))
    print()
    for split, t in sorted(totals(results).items()):
        n = sum(t.values())
        print(f"{split}: right {pct(t['right'], n)}, wrong {pct(t['wrong'], n)}, "
              f"missing {pct(t['missing'], n)}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(totals(results), indent=2) + "\n")


if __name__ == "__main__":
    main()
