"""`pipeline runs`: list runs by their stored status, show one, cancel one as a tree, and rerun
a finished one from a stage or compare its outputs' versions (pipeline/commands/reruns.py).

A run is a root job and every job it led to, named by the root's id. Its status is stored
(pipeline.runs, kept by the statements that change its jobs): running, waiting, done, failed
(a job of it failed for good, so it can never end done; the job is named) or cancelled.
`waiting` and `signal` (pipeline/commands/waits.py) list open waits and answer one. The
reads live in pipeline/admin/runs.py; this module parses, checks and prints. With --tenant,
every query is scoped to that tenant.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from datetime import datetime
from typing import Any

import psycopg

from pg_pipeline.admin import runs as admin
from pg_pipeline.commands import reruns, waits
from pg_pipeline.commands.api import (
    EXIT_OK,
    CliError,
    Subcommands,
    add_command,
    integer_arg,
    job_id_arg,
    open_db,
    printable,
    tenant_arg,
    text_arg,
)
from pg_pipeline.output_versions import output_versions
from pg_pipeline.vocabulary import RUN_STATUSES
from pg_pipeline.wording import counted

LIST_LIMIT_MAX = 1000  #: runs `runs list` prints at most


def add_commands(sub: Subcommands) -> None:
    runs = add_command(
        sub, "runs", run, "inspect runs (a root job and all it led to), cancel or rerun one"
    )
    verbs = runs.add_subparsers(dest="runs_command", required=True)

    def tenant_option(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--tenant", type=tenant_arg, help="only this tenant's runs (every query is scoped)"
        )

    ls = verbs.add_parser(
        "list",
        help="the newest runs of more than one job, and jobs waiting alone, with their status "
        "(other single jobs are not listed: see `pipeline jobs list`, e.g. --status failed)",
    )
    ls.add_argument("--status", choices=RUN_STATUSES)
    tenant_option(ls)
    ls.add_argument(
        "--limit", type=integer_arg(1, LIST_LIMIT_MAX), default=20, help=f"1..{LIST_LIMIT_MAX}"
    )
    ls.add_argument(
        "--before", type=job_id_arg, help="only runs below this id: the previous page's last"
    )
    ls.add_argument("--json", action="store_true", help="print a JSON array")

    show = verbs.add_parser(
        "show", help="one run: its status, what blocks it, and its stages' jobs by status"
    )
    show.add_argument("id", type=job_id_arg, help="the run's id (its root job's)")
    tenant_option(show)
    show.add_argument("--json", action="store_true", help="print it as JSON")

    cancel = verbs.add_parser(
        "cancel",
        help="cancel a run (or a job inside one, with everything it led to): every queued and "
        "running job of it, in one transaction; running ones stop on their workers, and the "
        "run ends cancelled",
    )
    cancel.add_argument("id", type=job_id_arg, help="the run's id, or a job's inside it")
    cancel.add_argument("--reason", type=text_arg)
    tenant_option(cancel)
    waits.add_verbs(verbs)
    reruns.add_verbs(verbs, tenant_option)


def run(args: argparse.Namespace) -> int:
    _, conn = open_db()
    with conn:
        if args.runs_command == "list":
            _list(conn, args)
        elif args.runs_command == "show":
            _show(conn, args)
        elif args.runs_command == "cancel":
            _cancel(conn, args)
        elif args.runs_command in waits.VERBS:
            waits.run(conn, args)
        else:
            reruns.run_verb(conn, args)
    return EXIT_OK


def _json_value(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _list(conn: psycopg.Connection[Any], args: argparse.Namespace) -> None:
    rows = admin.list_runs(conn, args.tenant, args.before, status=args.status, limit=args.limit)
    if args.json:
        print(json.dumps([dataclasses.asdict(r) for r in rows], indent=2, default=_json_value))
        return
    head = f"{'run':>10}  {'stage':<16}{'tenant':<12}{'status':<10}{'jobs':>6}{'active':>7}"
    print(f"{head}  blocked by")
    for r in rows:
        tenant = "-" if r.tenant_id is None else printable(r.tenant_id)[:11]
        blocked = ""
        if r.blocked_job_id is not None:
            reason = printable((r.blocked_reason or "").splitlines()[0] if r.blocked_reason else "")
            blocked = f"job {r.blocked_job_id}: {reason[:60]}"
        print(
            f"{r.id:>10}  {printable(r.type or '?'):<16}{tenant:<12}{r.status:<10}"
            f"{r.jobs:>6}{r.active:>7}  {blocked}"
        )


def _show(conn: psycopg.Connection[Any], args: argparse.Namespace) -> None:
    found = admin.read_run(conn, args.id, args.tenant)
    if found is None:
        raise CliError(f"no run {args.id}")
    versions = output_versions(conn, args.id, tenant=args.tenant) or []
    if args.json:
        shown = {
            "id": found.id,
            "tenant_id": found.tenant_id,
            "status": found.status,
            "blocked_job_id": found.blocked_job_id,
            "blocked_reason": found.blocked_reason,
            "blocked_steps": [dataclasses.asdict(b) for b in found.blocked_steps],
            "jobs": found.total,
            "stages": {s.stage: s.counts for s in found.stages},
            "output_versions": [dataclasses.asdict(v) for v in versions],
        }
        print(json.dumps(shown, indent=2, default=_json_value))
        return
    tenant = "-" if found.tenant_id is None else printable(found.tenant_id)
    print(f"run {found.id}: {found.status} · tenant {tenant} · {counted(found.total, 'job')}")
    if found.blocked_job_id is not None:
        reason = printable(found.blocked_reason or "")
        print(f"blocked by job {found.blocked_job_id}: {reason}")
    for stage in found.stages:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(stage.counts.items()))
        print(f"  {printable(stage.stage):<16}{counts}")
    for step in found.blocked_steps:
        why = (
            f"{counted(step.failed, 'job')} of the fan-out of job {step.after} failed or"
            f" {'was' if step.failed == 1 else 'were'} cancelled"
            if step.fan_out
            else f"job {step.after} failed before enqueueing it"
        )
        print(f"  {printable(step.stage):<16}never runs: {why}")
    for line in reruns.version_lines(versions):
        print(line)


def _cancel(conn: psycopg.Connection[Any], args: argparse.Namespace) -> None:
    cancelled = admin.cancel_tree(conn, args.id, args.tenant, reason=args.reason)
    if cancelled is None:
        raise CliError(f"no job {args.id}")
    print(f"{args.id}: cancelled {counted(len(cancelled), 'job')}")
