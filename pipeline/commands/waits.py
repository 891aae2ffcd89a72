"""`pipeline runs waiting` and `pipeline runs signal`: the open waits, and answering one
(pg_pipeline.waits). Verbs of `pipeline runs` (pipeline/commands/runs.py adds them)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from datetime import datetime
from typing import Any

import psycopg

from pg_pipeline.admin.waits import LIST_MAX, list_waits
from pg_pipeline.commands.api import (
    CliError,
    integer_arg,
    job_id_arg,
    parse_payload,
    printable,
    printable_json,
    tenant_arg,
)
from pg_pipeline.errors import InvalidSignal, NoWaitingStep
from pg_pipeline.inputs import wait_name
from pg_pipeline.waits import signal

VERBS = ("waiting", "signal")


def _name_arg(text: str) -> str:
    try:
        return wait_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_verbs(verbs: Any) -> None:
    """Add `waiting` and `signal` to the `pipeline runs` parser's verbs."""
    waiting = verbs.add_parser(
        "waiting", help="the open waits (stages waiting for input), oldest first"
    )
    waiting.add_argument("--tenant", type=tenant_arg, help="only this tenant's waits")
    waiting.add_argument("--name", type=_name_arg, help="only waits of this name")
    waiting.add_argument(
        "--limit", type=integer_arg(1, LIST_MAX), default=100, help=f"1..{LIST_MAX}"
    )
    waiting.add_argument("--json", action="store_true", help="print a JSON array")

    sig = verbs.add_parser(
        "signal",
        help="answer a run's wait: the job waiting on NAME resumes with the payload, which "
        "must fit the schema its stage asked for",
    )
    sig.add_argument("id", type=job_id_arg, help="the run's id (its root job's)")
    sig.add_argument("name", type=_name_arg, help="the wait's name")
    sig.add_argument(
        "--payload", required=True, help="the answer as JSON, or - to read it from stdin"
    )
    sig.add_argument(
        "--job", type=job_id_arg, help="which job, when several of the run wait on NAME"
    )
    sig.add_argument("--tenant", type=tenant_arg, help="only this tenant's runs")


def run(conn: psycopg.Connection[Any], args: argparse.Namespace) -> None:
    if args.runs_command == "waiting":
        _waiting(conn, args)
    else:
        _signal(conn, args)


def _json_value(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _waiting(conn: psycopg.Connection[Any], args: argparse.Namespace) -> None:
    tasks = list_waits(conn, tenant=args.tenant, name=args.name, limit=args.limit)
    if args.json:
        rows = [dataclasses.asdict(t) for t in tasks]
        print(printable_json(rows, indent=2, default=_json_value))
        return
    print(f"{'run':>10}{'job':>10}  {'stage':<16}{'tenant':<12}{'name':<16}{'deadline':<26}detail")
    for t in tasks:
        tenant = "-" if t.tenant_id is None else printable(t.tenant_id)[:11]
        detail = printable(json.dumps(t.detail)) if t.detail is not None else ""
        print(
            f"{t.run_id:>10}{t.job_id:>10}  {printable(t.stage)[:15]:<16}{tenant:<12}"
            f"{printable(t.name)[:15]:<16}{t.deadline.isoformat(timespec='seconds'):<26}"
            f"{detail[:60]}"
        )


def _signal(conn: psycopg.Connection[Any], args: argparse.Namespace) -> None:
    text = sys.stdin.read() if args.payload == "-" else args.payload
    payload = parse_payload(text)
    try:
        job_id = signal(conn, args.id, args.name, payload, job_id=args.job, tenant=args.tenant)
    except (InvalidSignal, NoWaitingStep) as exc:
        raise CliError(printable(str(exc))) from None
    print(f"run {args.id}: job {job_id} resumed ({printable(args.name)})")
