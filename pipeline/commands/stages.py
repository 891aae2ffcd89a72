"""`pipeline stages`: the stages workers recorded, which commands without --app may name."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from datetime import datetime

from pg_pipeline.commands.api import EXIT_OK, Subcommands, add_command, open_db, printable
from pg_pipeline.recorded_stages import recorded_stages


def add_commands(sub: Subcommands) -> None:
    s = add_command(
        sub,
        "stages",
        run,
        "the stages workers recorded: versions, whether a live worker runs them",
        "Each worker records its stages when it starts, one row per version of a stage's input "
        "model. enqueue, tenants and schedule without --app check names and payloads against "
        "them (a live worker's versions, else the one recorded last).",
    )
    s.add_argument("--json", action="store_true", help="one JSON object per line, with schemas")


def _json_value(value: object) -> str:
    """A time as ISO 8601 with its offset; a worker's UUID as text."""
    return value.isoformat() if isinstance(value, datetime) else str(value)


def run(args: argparse.Namespace) -> int:
    _, conn = open_db()
    with conn:
        found = recorded_stages(conn)
    if args.json:
        for stage in found:
            print(json.dumps(asdict(stage), default=_json_value))
        return EXIT_OK
    if not found:
        print("no stages recorded: a worker records its stages when it starts")
        return EXIT_OK
    rows = [
        (
            printable(s.name),
            s.version,
            "yes" if s.live else "no",
            printable(s.then or "-"),
            printable(s.code_version or "-"),
            printable(s.hostname),
            s.updated_at.isoformat(timespec="seconds"),
        )
        for s in found
    ]
    header = ("stage", "version", "live", "then", "code version", "recorded by", "recorded at")
    widths = [max(len(cells[i]) for cells in [header, *rows]) for i in range(len(header))]
    for cells in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
    return EXIT_OK
