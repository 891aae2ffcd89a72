"""Field accuracy of the offline extractor: right, wrong and missing, and what confidence means.

    python -m benchmarks.extraction_accuracy [--split SPLIT ...] [--samples] [--no-realworld]
        [--layouts-from-text-layer] [--english]
    python -m benchmarks.extraction_accuracy --labels-from-db [--tenant T]

It measures three sets and prints Markdown tables for the README:

* the generated corpus, sample_docs/corpus: SPLIT is dev, heldout, fresh, unseen, varied,
  unseen2 ... unseen7 or all (the default); repeat --split to measure several;
* the held-out wording: the ``unseen2`` to ``unseen7`` splits use wording pools held out from the
  rules, each written before a round of changes and measured once after it (the README says which
  rounds changed the rules after their measurement);
* real publishers' documents, when ``../shared/realworld/dev`` (or ``PIPELINE_REALWORLD_DIR``) is
  there, scored by the set's own ``score.py``, the documents the rules were tuned on apart from
  the held-out ones (see ``benchmarks.extraction_realworld``); the output says when it is absent.

Each page goes through the `ocr` stage's engine (text layer when present, else tesseract in the
language the `upload` stage decides for the document), the pages and the layouts the engine
gives them through the offline extractor (as the `extract` stage passes them, so the fields are
what ``pipeline submit FILE --wait`` prints on the defaults), and every field is compared with
the ground truth:

* right: equal to the truth (an empty list or null where the truth has none counts as right; a
  CPV code reported as its 8-digit stem matches the code with that stem);
* missing: the extractor said "unknown" (null / empty) where the truth has a value;
* wrong: the extractor gave a value that is not the truth's (including a value where the truth
  has none). Wrong is the expensive outcome: it is counted apart from missing.

The confidence table counts the values given, per band of the evidence's confidence, right and
wrong, on the real documents and the corpus: the band called "high" is the one to trust.
``--layouts-from-text-layer`` builds a text layer's layout here where the engine returns none
(the engine fills them since the `ocr` stage does: the flag then changes nothing).
``--english`` reads every scan in English, as before the `upload` stage chose a language.

``--labels-from-db`` measures against what reviewers said instead (see the README's "Reviewing
uncertain fields"): every document of the database (``DATABASE_URL``) a person reviewed on the
dashboard, its pages as its `ocr` jobs stored them, through today's extractor, each field
compared with the reviewed value. Two tables: the labels alone (the fields reviewers corrected,
which the extractor got wrong then: how many it gets right now), and every field of the
reviewed documents (the fields a reviewer accepted count as right answers too).
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

from benchmarks import extraction_realworld as realworld
from benchmarks.ocr_quality import cer
from pg_pipeline_documents.extract import extract_fields
from pg_pipeline_documents.layout import PageLayout
from pg_pipeline_documents.ocr_engine import PageText, ocr_page
from pg_pipeline_documents.ocr_language import SAMPLE_CHARS, document_language
from pg_pipeline_documents.pdfinfo import inspect_pdf
from pg_pipeline_documents.tender import TenderExtraction, TenderFields

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
    #: The evidence's confidence per field given a value (None from an extractor without it).
    confidence: dict[str, float | None]

    def count(self, outcome: Outcome) -> int:
        return sum(o == outcome for o in self.outcomes.values())


def load_truth(pdf: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (pdf.parent / "ground_truth" / f"{pdf.stem}.json").read_text()
    )
    return data


#: An extractor given a document's pages and their layouts (None where the engine gave none).
Extract = Callable[[list[str], list[PageLayout | None]], TenderFields | TenderExtraction]


def language_of(pdf: Path) -> str:
    """The language the `upload` stage reads the document's scans in."""
    info = inspect_pdf(pdf, sample_chars=SAMPLE_CHARS)
    return document_language(pdf, info.text_sample, info.page_count)


def measure(
    pdf: Path, dpi: int, pool: ThreadPoolExecutor, extract: Extract, *, english: bool = False
) -> Result:
    truth = load_truth(pdf)
    doc = pdfium.PdfDocument(pdf)
    count = len(doc)
    doc.close()
    lang = "eng" if english else language_of(pdf)
    pages = list(pool.map(lambda i: ocr_page(pdf, i, dpi=dpi, lang=lang), range(count)))
    found = extract([p.text for p in pages], [p.layout for p in pages])
    fields = found.fields() if isinstance(found, TenderExtraction) else found
    outcomes = score(fields, TenderFields.model_validate(truth["fields"]))
    evidence = found.evidence if isinstance(found, TenderExtraction) else {}
    return Result(
        name=pdf.name,
        family=truth.get("family", "samples"),
        split=truth.get("split", "samples"),
        pages=pages,
        page_cer=[cer(p.text, t) for p, t in zip(pages, truth["pages"], strict=True)],
        outcomes=outcomes,
        confidence={
            f: (evidence[f].confidence if f in evidence and o != "missing" else None)
            for f, o in outcomes.items()
        },
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


def rwm(outcomes: Sequence[str]) -> str:
    """right / wrong / missing, each with its share."""
    n = len(outcomes)
    return " / ".join(pct(sum(o == k for o in outcomes), n) for k in ("right", "wrong", "missing"))


def grouped_table(
    verdicts: Sequence[tuple[str, str, str]], head: str, fields: Sequence[str]
) -> str:
    """(group, field, outcome) triples as a table: a row per field, a column per group."""
    groups = sorted({g for g, _, _ in verdicts})
    rows = [
        f"| {head} | " + " | ".join(f"{g}: right / wrong / missing" for g in groups) + " |",
        "|---|" + "---|" * len(groups),
    ]
    for name in [*fields, "all fields"]:
        cells = [
            rwm([o for g2, f, o in verdicts if g2 == g and name in ("all fields", f)])
            for g in groups
        ]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def field_table(results: Sequence[Result]) -> str:
    triples = [(r.split, f, o) for r in results for f, o in r.outcomes.items()]
    return grouped_table(triples, "field", FIELDS)


def family_table(results: Sequence[Result]) -> str:
    triples = [(r.family, f, o) for r in results for f, o in r.outcomes.items()]
    return grouped_table(triples, "field", FIELDS)


def totals(results: Sequence[Result]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in results:
        t = out.setdefault(r.split, {"right": 0, "wrong": 0, "missing": 0})
        for o in r.outcomes.values():
            t[o] += 1
    return out


#: Confidence bands, from the top: the first is what the README calls "high".
BANDS = ((0.9, "high (>= 0.9)"), (0.75, "0.75-0.9"), (0.5, "0.5-0.75"), (0.0, "below 0.5"))


def band(confidence: float) -> str:
    return next(name for low, name in BANDS if confidence >= low)


def confidence_table(sets: Sequence[tuple[str, Sequence[tuple[str, float | None]]]]) -> str:
    """Values given, per confidence band: how many were right and wrong, per set of documents.
    ``sets`` holds (name, [(outcome, confidence)]) for every value given (not missing)."""
    rows = [
        "| confidence | " + " | ".join(f"{n}: right / wrong" for n, _ in sets) + " |",
        "|---|" + "---|" * len(sets),
    ]
    for _low, name in BANDS:
        cells = []
        for _set, given in sets:
            inside = [o for o, c in given if c is not None and band(c) == name]
            right, wrong = inside.count("right"), inside.count("wrong")
            share = f" ({right / (right + wrong):.1%} right)" if right + wrong else ""
            cells.append(f"{right} / {wrong}{share}")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def extract_pages(pages: list[str], layouts: list[PageLayout | None]) -> TenderExtraction:
    """The extractor as the `extract` stage calls it: with the document's pages in order and
    the layouts the `ocr` stage gave them (``pipeline submit FILE --wait`` on the defaults)."""
    return extract_fields(pages, layouts=layouts)


def load_extractor(path: Path) -> Extract:
    """``extract_offline(text)`` from an older file, given the pages joined into one text (an
    older extractor reads no layouts)."""
    spec = importlib.util.spec_from_file_location("measured_extractor", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    function: Callable[[str], TenderFields] = module.extract_offline
    return lambda pages, _layouts: function("\n".join(pages))


def realworld_report(verdicts: Sequence[realworld.Verdict]) -> str:
    """The real documents: per field, tuned-on and held-out apart; per family; per document."""
    names = sorted({v.name for v in verdicts})
    held = realworld.held_out(names)
    part = {n: ("held out" if n in held else "tuned on") for n in names}
    out = [
        "Held out (every third document of each family by name, fixed before tuning): "
        + ", ".join(f"`{n}`" for n in sorted(held)),
        "",
        grouped_table(
            [(part[v.name], v.field, v.outcome) for v in verdicts], "field", realworld.FIELDS
        ),
        "",
        grouped_table(
            [(realworld.family(v.name), v.field, v.outcome) for v in verdicts],
            "field",
            realworld.FIELDS,
        ),
        "",
    ]
    for which in ("tuned on", "held out"):
        outcomes = [v.outcome for v in verdicts if part[v.name] == which]
        n = len(outcomes)
        out.append(
            f"realworld {which}: {outcomes.count('right')}/{n} right, "
            f"{outcomes.count('wrong')} wrong, {outcomes.count('missing')} missing"
        )
    outcomes = [v.outcome for v in verdicts]
    out.append(
        f"realworld: {outcomes.count('right')}/{len(outcomes)} right, "
        f"{outcomes.count('wrong')} wrong, {outcomes.count('missing')} missing"
    )
    return "\n".join(out)


@dataclass(frozen=True)
class ReviewedDocument:
    """A document a person reviewed: its pages as the `ocr` stage stored them, and the fields
    as the reviewer left them, with the fields they corrected."""

    document: int
    pages: list[str]
    layouts: list[PageLayout | None]
    fields: TenderFields
    corrected: frozenset[str]


@dataclass(frozen=True)
class LabelVerdict:
    document: int
    field: str
    labelled: bool  #: a reviewer corrected this field (it has a label)
    outcome: Outcome


def reviewed_documents(conn: Any, tenant: str | None = None) -> list[ReviewedDocument]:
    """The documents of the database whose fields a person accepted or corrected."""
    from pg_pipeline.runs import run_outputs
    from pg_pipeline_documents.documents import PageResult
    from pg_pipeline_documents.labels import reviews

    out = []
    for stored, reviewed in reviews(conn, tenant=tenant):
        if reviewed.status not in ("accepted", "corrected"):
            continue  # no person looked: nothing to learn
        pages = [PageResult.model_validate(o) for _, o in run_outputs(conn, stored.run_id, "ocr")]
        if not pages:
            continue  # its run was pruned, or it came from elsewhere
        out.append(
            ReviewedDocument(
                document=stored.run_id,
                pages=[p.text for p in pages],
                layouts=[p.layout for p in pages],
                fields=reviewed.fields,
                corrected=frozenset(label.field for label in reviewed.labels),
            )
        )
    return out


def score_reviewed(documents: Sequence[ReviewedDocument], extract: Extract) -> list[LabelVerdict]:
    """Each field of each reviewed document: the extractor's value against the reviewer's."""
    verdicts = []
    for doc in documents:
        found = extract(doc.pages, doc.layouts)
        fields = found.fields() if isinstance(found, TenderExtraction) else found
        for name, outcome in score(fields, doc.fields).items():
            verdicts.append(LabelVerdict(doc.document, name, name in doc.corrected, outcome))
    return verdicts


def labels_report(verdicts: Sequence[LabelVerdict]) -> str:
    documents = len({v.document for v in verdicts})
    labelled = [v for v in verdicts if v.labelled]
    return "\n".join(
        [
            f"{documents} reviewed document(s), {len(labelled)} label(s)",
            "",
            grouped_table([("labels", v.field, v.outcome) for v in labelled], "field", FIELDS),
            "",
            grouped_table(
                [("every reviewed field", v.field, v.outcome) for v in verdicts], "field", FIELDS
            ),
        ]
    )


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
    parser.add_argument(
        "--no-realworld", action="store_true", help="skip the real publishers' documents"
    )
    parser.add_argument(
        "--layouts-from-text-layer",
        action="store_true",
        help="give the extractor layouts built from the text layer where the engine gives none",
    )
    parser.add_argument(
        "--english", action="store_true", help="read every scan in English, whatever its language"
    )
    parser.add_argument(
        "--labels-from-db",
        action="store_true",
        help="score against the reviewed documents and labels in DATABASE_URL instead",
    )
    parser.add_argument("--tenant", help="with --labels-from-db: this tenant's documents alone")
    args = parser.parse_args(argv)
    if args.labels_from_db:
        from pg_pipeline import connect

        with connect() as conn:
            documents = reviewed_documents(conn, args.tenant)
        if not documents:
            print("no reviewed documents: nothing to score (see `pipeline documents labels`)")
            return
        print(labels_report(score_reviewed(documents, extract_pages)))
        return
    extract: Extract = (
        extract_pages if args.extractor_file is None else load_extractor(args.extractor_file)
    )
    pdfs = sorted(CORPUS.glob("*.pdf"))
    if args.split and "all" not in args.split:
        pdfs = [p for p in pdfs if load_truth(p)["split"] in args.split]
    if args.samples:
        pdfs += sorted(SAMPLES.glob("*.pdf"))
    with ThreadPoolExecutor(args.parallel) as pool:
        results = [measure(pdf, args.dpi, pool, extract, english=args.english) for pdf in pdfs]
    print(sample_table(results))
    print()
    print(field_table(results))
    print()
    print(family_table(results))
    print()
    for split, t in sorted(totals(results).items()):
        n = sum(t.values())
        print(f"{split}: right {pct(t['right'], n)}, wrong {pct(t['wrong'], n)}, "
              f"missing {pct(t['missing'], n)}")  # fmt: skip
    verdicts: list[realworld.Verdict] | None = None
    if not args.no_realworld and args.extractor_file is None:
        verdicts = realworld.measure(
            extract_pages, layouts_from_text_layer=args.layouts_from_text_layer
        )
        print()
        if verdicts is None:
            print(f"realworld: {realworld.realworld_dir()} is not there: not measured")
        else:
            print(realworld_report(verdicts))
    print()
    corpus_given = [
        (o, r.confidence[f]) for r in results for f, o in r.outcomes.items() if o != "missing"
    ]
    sets: list[tuple[str, Sequence[tuple[str, float | None]]]] = [("corpus", corpus_given)]
    if verdicts:
        given = [(v.outcome, v.confidence) for v in verdicts if v.outcome != "missing"]
        sets.insert(0, ("real documents", given))
    print(confidence_table(sets))
    if args.json:
        args.json.write_text(json.dumps(totals(results), indent=2) + "\n")


if __name__ == "__main__":
    main()
