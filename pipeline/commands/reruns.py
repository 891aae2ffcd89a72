"""`pipeline runs rerun` and `pipeline runs diff`: re-run a finished run from a stage as its next
generation (pipeline/reruns.py), and show two versions of a stage's outputs side by side
(pipeline/output_versions.py). Parsing, checking and printing only; `pipeline runs` adds them."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import psycopg

from pg_pipeline.commands.api import (
    EXIT_USAGE,
    CliError,
    job_id_arg,
    load_apps,
    stage_arg,
    text_arg,
)
from pg_pipeline.errors import UnknownStage
from pg_pipeline.output_versions import (
    NoSuchVersion,
    OutputDiff,
    OutputVersion,
    PartDiff,
    diff_outputs,
)
from pg_pipeline.reruns import RerunRefused, SameVersion, rerun
from pg_pipeline.terminal import printable, printable_json
from pg_pipeline.wording import counted

#: characters of a value a side of `runs diff` shows on one line
CELL = 36

Verbs = Any  # argparse's subparsers action, whose type argparse keeps private


def add_verbs(verbs: Verbs, tenant_option: Callable[[argparse.ArgumentParser], None]) -> None:
    again = verbs.add_parser(
        "rerun",
        help="enqueue a finished run's stage again, and what follows it, as the run's next "
        "generation: the stages before it are not run, their stored outputs are reused; once "
        "per (run, stage, code version)",
    )
    again.add_argument("id", type=job_id_arg, help="the run's id (its root job's)")
    again.add_argument("--from", dest="stage", required=True, type=stage_arg, help="the stage")
    tenant_option(again)
    again.add_argument(
        "--force",
        action="store_true",
        help="rerun even though the stage's newest outputs were made by the version its "
        "workers run (the same code again: a flaky model, an outside service that changed)",
    )
    again.add_argument(
        "--app",
        action="append",
        type=text_arg,
        default=[],
        help="the code version to expect when no live worker recorded the stage's: this app's",
    )
    again.add_argument("--json", action="store_true", help="print the rerun as JSON")

    diff = verbs.add_parser(
        "diff",
        help="two versions of a stage's outputs in a run side by side, field by field",
    )
    diff.add_argument("id", type=job_id_arg, help="the run's id (its root job's)")
    diff.add_argument("--stage", required=True, type=stage_arg)
    diff.add_argument(
        "--versions",
        type=_versions_arg,
        help="A,B: each a code version or a generation (generation:N, or N); default the two "
        "newest generations",
    )
    tenant_option(diff)
    diff.add_argument("--all", action="store_true", help="show the fields that did not change too")
    diff.add_argument("--json", action="store_true", help="print the comparison as JSON")


def _versions_arg(text: str) -> tuple[str, str]:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise argparse.ArgumentTypeError(f"give two versions as A,B, not {text!r}")
    return parts[0], parts[1]


def run_verb(conn: psycopg.Connection[Any], args: argparse.Namespace) -> bool:
    """Run `args.runs_command` if it is one of these verbs; False if it is not."""
    if args.runs_command == "rerun":
        _rerun(conn, args)
    elif args.runs_command == "diff":
        _diff(conn, args)
    else:
        return False
    return True


def _json_value(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _rerun(conn: psycopg.Connection[Any], args: argparse.Namespace) -> None:
    if args.app:
        load_apps(args.app)
    try:
        made = rerun(conn, args.id, args.stage, tenant=args.tenant, force=args.force)
    except SameVersion as exc:
        raise CliError(f"{exc} (--force)") from None
    except UnknownStage as exc:
        # A name no worker ever ran is a typo, said as such, like every command's (exit 2).
        raise CliError(str(exc), EXIT_USAGE) from None
    except RerunRefused as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(printable_json(dataclasses.asdict(made), indent=2, default=_json_value))
        return
    jobs = f"{counted(made.jobs, 'job')} of the stage"
    head = (
        f"run {made.run_id}: {'' if made.created else 'already '}rerun from "
        f"{printable(made.stage)} at version {printable(made.code_version)} as generation "
        f"{made.generation}{' (forced)' if made.forced else ''}"
    )
    if made.created:
        print(f"{head}: {jobs} enqueued")
    else:
        print(f"{head}, with {jobs}: nothing enqueued now")


def _diff(conn: psycopg.Connection[Any], args: argparse.Namespace) -> None:
    try:
        found = diff_outputs(conn, args.id, args.stage, args.versions, tenant=args.tenant)
    except NoSuchVersion as exc:
        raise CliError(str(exc), EXIT_USAGE if args.versions else 1) from None
    if args.json:
        print(printable_json(_diff_json(found), indent=2, default=_json_value))
        return
    for line in diff_lines(found, every_field=args.all):
        print(line)


def _diff_json(found: OutputDiff) -> dict[str, Any]:
    def side(part: PartDiff) -> dict[str, Any]:
        shown: dict[str, Any] = {"part": part.part, "changed": part.changed}
        if part.fields is None:
            shown.update(left=part.left, right=part.right)
        else:
            shown["fields"] = [
                {"field": f.field, "left": f.left, "right": f.right, "changed": f.changed}
                | ({} if f.in_left else {"missing": "left"})
                | ({} if f.in_right else {"missing": "right"})
                for f in part.fields
            ]
        return shown

    return {
        "run_id": found.run_id,
        "stage": found.stage,
        "left": dataclasses.asdict(found.left),
        "right": dataclasses.asdict(found.right),
        "changed": found.changed,
        "parts": [side(p) for p in found.parts],
    }


def diff_lines(found: OutputDiff, *, every_field: bool = False) -> list[str]:
    """The comparison as text: a column per version, a block per part, changed fields marked
    with `*` (the unchanged ones counted, or shown with `every_field`)."""
    left, right = found.left, found.right
    lines = [
        f"run {found.run_id}, stage {printable(found.stage)}: "
        f"{printable(left.label)} vs {printable(right.label)}",
        f"  {'':<2}{'field':<20} {_cell(left.label, raw=True)} {_cell(right.label, raw=True)}",
    ]
    for part in found.parts:
        name = "output" if part.part is None else f"part {part.part}"
        if part.left is None or part.right is None:
            missing = printable(left.label if part.left is None else right.label)
            lines.append(f"{name}: only in one version (none in {missing})")
        elif not part.changed:
            lines.append(f"{name}: the same")
            if not every_field:
                continue
        else:
            lines.append(f"{name}:")
        if part.fields is None:
            mark = "*" if part.changed else " "
            lines.append(f"  {mark} {'(value)':<20} {_cell(part.left)} {_cell(part.right)}")
            continue
        unchanged = 0
        for f in part.fields:
            if not f.changed and not every_field:
                unchanged += 1
                continue
            l_value = _cell(f.left) if f.in_left else _cell("(none)", raw=True)
            r_value = _cell(f.right) if f.in_right else _cell("(none)", raw=True)
            mark = "*" if f.changed else " "
            lines.append(f"  {mark} {printable(f.field)[:20]:<20} {l_value} {r_value}")
        if unchanged:
            lines.append(f"    ({counted(unchanged, 'field')} unchanged)")
    if not found.changed:
        lines.append("no output changed")
    return [line.rstrip() for line in lines]


def _cell(value: Any, *, raw: bool = False) -> str:
    text = value if raw and isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = printable(text)
    return (text if len(text) <= CELL else text[: CELL - 1] + "…").ljust(CELL)


def version_lines(versions: list[OutputVersion]) -> list[str]:
    """`runs show`'s lines for a run's output versions: only once it was rerun (a run's first
    generation alone is what every run has), one line per stage with its generations."""
    if not any(v.generation for v in versions):
        return []
    stages: dict[str, list[str]] = {}
    for v in versions:
        made = f", rerun from {printable(v.rerun_from)}" if v.rerun_from else ""
        version = printable(v.code_version or "unversioned")
        stages.setdefault(v.stage, []).append(f"generation {v.generation} ({version}{made})")
    lines = ["output versions (runs diff ID --stage STAGE compares two):"]
    lines += [f"  {printable(stage):<16}{', '.join(gens)}" for stage, gens in stages.items()]
    return lines
