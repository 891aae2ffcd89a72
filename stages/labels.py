"""The corrections reviewers made, read back as labels, and `pipeline documents labels`.

A label is kept in the `review` stage's output of the document it corrects (Reviewed.labels),
so it lives as long as the document's run: retention prunes both (`pipeline documents labels
--json` exports them first). `benchmarks.extraction_accuracy --labels-from-db` scores the
extractor against them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from pydantic import ValidationError

from pg_pipeline import stage_outputs
from pg_pipeline.commands.api import (
    EXIT_OK,
    Subcommands,
    integer_arg,
    open_db,
    printable,
    printable_json,
    tenant_arg,
)
from pg_pipeline_documents.review import Label, Reviewed

REVIEW_STAGE = "review"
PAGE = 500  #: review outputs read per statement
VALUE_SHOWN = 60  #: characters of a value in the table


@dataclass(frozen=True)
class StoredLabel:
    """A label with the document it was made on."""

    document: int  #: the document's run id (what `pipeline submit` printed)
    tenant: str | None
    filename: str | None
    reviewed_at: datetime
    label: Label

    def as_json(self) -> dict[str, Any]:
        return {
            "document": self.document,
            "tenant": self.tenant,
            "file": self.filename,
            "reviewed_at": self.reviewed_at.isoformat(),
            **self.label.model_dump(mode="json"),
        }


def reviews(
    conn: psycopg.Connection[Any], *, tenant: str | None = None
) -> Iterator[tuple[Any, Reviewed]]:
    """Every stored review outcome (of `tenant`'s documents alone when given), oldest first,
    with its StoredOutput; an output this version cannot read is skipped."""
    after = 0
    while True:
        batch = stage_outputs(conn, REVIEW_STAGE, tenant=tenant, after=after, limit=PAGE)
        for stored in batch:
            try:
                yield stored, Reviewed.model_validate(stored.output)
            except ValidationError:
                continue  # another app's stage of the same name, or a future shape
        if len(batch) < PAGE:
            return
        after = batch[-1].job_id


def read_labels(
    conn: psycopg.Connection[Any], *, tenant: str | None = None, limit: int | None = None
) -> list[StoredLabel]:
    """The labels of every reviewed document, oldest review first, at most `limit`."""
    out: list[StoredLabel] = []
    for stored, reviewed in reviews(conn, tenant=tenant):
        for label in reviewed.labels:
            out.append(
                StoredLabel(
                    document=stored.run_id,
                    tenant=stored.tenant_id,
                    filename=reviewed.filename,
                    reviewed_at=stored.created_at,
                    label=label,
                )
            )
            if limit is not None and len(out) >= limit:
                return out
    return out


def add_commands(sub: Subcommands) -> None:
    d = sub.add_parser(
        "documents",
        help="what reviewers taught the document pipeline",
        description="Read what the documents app keeps besides each document's fields.",
    )
    d.set_defaults(handler=run)
    dsub = d.add_subparsers(dest="documents_command", required=True)
    ls = dsub.add_parser(
        "labels",
        help="the corrections reviewers made: field, extracted, corrected, evidence",
        description="Each field a reviewer corrected on the dashboard's Review page: what the "
        "extractor gave, what the person said it is, and the line it was read from. "
        "Oldest first.",
    )
    ls.add_argument("--tenant", type=tenant_arg, help="this tenant's documents alone")
    ls.add_argument("--json", action="store_true", help="one JSON object per line")
    ls.add_argument("--limit", type=integer_arg(1, 10_000_000), help="labels printed at most")


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = printable(text)
    return text if len(text) <= VALUE_SHOWN else text[: VALUE_SHOWN - 1] + "…"


def run(args: argparse.Namespace) -> int:
    _, conn = open_db()
    with conn:
        labels = read_labels(conn, tenant=args.tenant, limit=args.limit)
    if args.json:
        for stored in labels:
            print(printable_json(stored.as_json()))
        return EXIT_OK
    if not labels:
        print("no labels: no reviewer has corrected a field yet")
        return EXIT_OK
    print("document\tfield\textracted\tcorrected\tconfidence\tevidence")
    for stored in labels:
        label = stored.label
        confidence = "-" if label.confidence is None else f"{label.confidence:.2f}"
        evidence = _cell(label.evidence or label.rejected or "-")
        print(
            f"{stored.document}\t{label.field}\t{_cell(label.extracted)}\t"
            f"{_cell(label.corrected)}\t{confidence}\t{evidence}"
        )
    return EXIT_OK
