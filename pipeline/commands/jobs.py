"""`pipeline jobs`: list, show, retry and cancel jobs, one by id or in bulk by filters.

The queries live in pipeline/admin/jobs.py; this module parses, checks and prints. Every
argument is checked before anything connects, so bad input is one line and exit 2 and changes
nothing. With --tenant, every query is scoped to that tenant.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from datetime import datetime
from typing import Any

import psycopg

from pg_pipeline.admin import jobs as admin
from pg_pipeline.attempt_logs import ATTEMPT_LOG_CAP
from pg_pipeline.commands import enqueue as enqueue_command
from pg_pipeline.commands.api import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    Subcommands,
    add_command,
    duration_arg,
    integer_arg,
    job_id_arg,
    open_db,
    printable,
    printable_json,
    printable_lines,
    stage_arg,
    tenant_arg,
    text_arg,
)
from pg_pipeline.vocabulary import JOB_STATUSES
from pg_pipeline.wording import counted

BATCH_MAX = 10_000  #: largest --batch of a bulk change: one transaction's row locks
LIST_LIMIT_MAX = 10_000  #: rows `jobs list` prints at most; they are all held in memory


def add_commands(sub: Subcommands) -> None:
    jobs = add_command(sub, "jobs", run, "inspect and steer jobs, one by id or in bulk")
    verbs = jobs.add_subparsers(dest="jobs_command", required=True)

    def tenant_option(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--tenant", type=tenant_arg, help="only this tenant's jobs (every query is scoped)"
        )

    def batch_option(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--batch",
            type=integer_arg(1, BATCH_MAX),
            default=admin.BULK_BATCH,
            help=f"jobs changed per transaction in bulk (1..{BATCH_MAX})",
        )

    ls = verbs.add_parser("list", help="the newest jobs, filtered")
    ls.add_argument("--status", choices=JOB_STATUSES)
    # --type: the flag's name before stages were called stages here.
    ls.add_argument("--stage", "--type", dest="stage", type=stage_arg, help="only this stage")
    tenant_option(ls)
    ls.add_argument("--since", type=duration_arg, help="created within, e.g. 90s, 15m, 2h, 7d")
    ls.add_argument(
        "--limit", type=integer_arg(1, LIST_LIMIT_MAX), default=20, help=f"1..{LIST_LIMIT_MAX}"
    )
    ls.add_argument(
        "--before",
        type=job_id_arg,
        help="only ids below this one: the last id of the previous page",
    )
    ls.add_argument("--json", action="store_true", help="print a JSON array")

    show = verbs.add_parser("show", help="one job as JSON: payload, attempts, timeline, run")
    show.add_argument("id", type=job_id_arg)
    tenant_option(show)

    logs = verbs.add_parser(
        "logs", help="the lines a job's stage logged, attempt by attempt (ended attempts)"
    )
    logs.add_argument("id", type=job_id_arg)
    tenant_option(logs)
    logs.add_argument("--json", action="store_true", help="print a JSON array of attempts")

    retry = verbs.add_parser(
        "retry", help="queue a failed or cancelled job again (or every failed one: --failed)"
    )
    retry.add_argument("id", nargs="?", type=job_id_arg)
    retry.add_argument("--failed", action="store_true", help="every failed job that matches")
    retry.add_argument("--stage", type=stage_arg, help="with --failed: only this stage")
    tenant_option(retry)
    batch_option(retry)

    enqueue_command.add_arguments(
        verbs.add_parser("enqueue", help="enqueue one job; prints its id")
    )

    cancel = verbs.add_parser(
        "cancel", help="cancel a queued or running job (or a stage's queued ones: --queued)"
    )
    cancel.add_argument("id", nargs="?", type=job_id_arg)
    cancel.add_argument(
        "--queued", action="store_true", help="every queued job of --stage (never running ones)"
    )
    cancel.add_argument("--stage", type=stage_arg, help="with --queued: the stage")
    cancel.add_argument("--reason", type=text_arg)
    tenant_option(cancel)
    batch_option(cancel)


def _check_target(args: argparse.Namespace, bulk_flag: str, bulk: bool) -> None:
    """One job by id, or the bulk form: never both, never neither. Before any connection."""
    verb = f"jobs {args.jobs_command}"
    if args.id is None and not bulk:
        raise CliError(f"{verb}: give a job id or {bulk_flag}", EXIT_USAGE)
    if args.id is not None and bulk:
        raise CliError(f"{verb}: give a job id or {bulk_flag}, not both", EXIT_USAGE)
    if args.id is not None and args.stage is not None:
        raise CliError(f"{verb}: --stage goes with {bulk_flag}, not with a job id", EXIT_USAGE)
    if args.id is None and args.jobs_command == "cancel" and args.stage is None:
        raise CliError(f"{verb}: --queued needs --stage", EXIT_USAGE)


def run(args: argparse.Namespace) -> int:
    if args.jobs_command == "enqueue":  # `pipeline enqueue`, beside the other verbs on jobs
        return enqueue_command.run(args)
    if args.jobs_command == "retry":
        _check_target(args, "--failed", args.failed)
    elif args.jobs_command == "cancel":
        _check_target(args, "--queued", args.queued)
    _, conn = open_db()
    with conn:
        if args.jobs_command == "list":
            _list(conn, args)
        elif args.jobs_command == "show":
            job = admin.get_job(conn, args.id, tenant=args.tenant)
            if job is None:
                raise CliError(f"no job {args.id}")
            print(json.dumps(dataclasses.asdict(job), indent=2, default=_json_value))
        elif args.jobs_command == "logs":
            _logs(conn, args)
        elif args.jobs_command == "retry":
            _retry(conn, args)
        elif args.jobs_command == "cancel":
            _cancel(conn, args)
    return EXIT_OK


def _logs(conn: psycopg.Connection[Any], args: argparse.Namespace) -> None:
    attempts = admin.job_logs(conn, args.id, tenant=args.tenant)
    if attempts is None:
        raise CliError(f"no job {args.id}")
    if args.json:
        rows = [dataclasses.asdict(a) for a in attempts]
        print(printable_json(rows, indent=2, default=_json_value))
        return
    if not attempts:
        print(f"job {args.id} has no ended attempt yet (lines are written when an attempt ends)")
    for a in attempts:
        ended = a.ended_at.isoformat(timespec="seconds")
        print(f"-- attempt {a.attempt} (claim {a.claims}), {a.outcome} at {ended}")
        if a.logs is not None:
            print(printable_lines(a.logs))
        elif not a.logs_dropped:
            print("(no lines)")
        if a.logs_dropped:
            cap = ATTEMPT_LOG_CAP // 1024
            print(f"({a.logs_dropped} more line(s) past the {cap} KiB cap, dropped)")


def _json_value(value: Any) -> str:
    """Times as ISO 8601 with their offset, for scripts; anything else (a worker's UUID) as
    text."""
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _list(conn: psycopg.Connection[Any], args: argparse.Namespace) -> None:
    where = admin.JobFilter(
        status=args.status, stage=args.stage, tenant=args.tenant, since_s=args.since
    )
    rows = admin.list_jobs(conn, where, limit=args.limit, before=args.before)
    if args.json:
        print(json.dumps([dataclasses.asdict(r) for r in rows], indent=2, default=_json_value))
        return
    print(f"{'id':>10}  {'type':<16}{'tenant':<12}{'status':<11}{'tries':>7}  last_error")
    for r in rows:
        short = printable(r.last_error.splitlines()[0])[:60] if r.last_error else ""
        tenant = "-" if r.tenant_id is None else printable(r.tenant_id)[:11]
        print(
            f"{r.id:>10}  {printable(r.type):<16}{tenant:<12}{r.status:<11}"
            f"{r.attempts:>3}/{r.max_attempts:<3}  {short}"
        )


def _retry(conn: psycopg.Connection[Any], args: argparse.Namespace) -> None:
    if args.failed:
        count = admin.retry_failed(conn, stage=args.stage, tenant=args.tenant, batch=args.batch)
        print(f"queued again {counted(count, 'failed job')}")
        return
    change = admin.retry_job(conn, args.id, tenant=args.tenant)
    if change is admin.Change.MISSING:
        raise CliError(f"no job {args.id}")
    if change is admin.Change.REFUSED:
        raise CliError(f"job {args.id} is not failed or cancelled; nothing to retry")
    if change is admin.Change.PRUNED:
        raise CliError(f"job {args.id} not retried: retention was deleting its run, now gone")
    print(f"job {args.id} queued again")


def _cancel(conn: psycopg.Connection[Any], args: argparse.Namespace) -> None:
    if args.queued:
        count = admin.cancel_queued(
            conn, args.stage, tenant=args.tenant, reason=args.reason, batch=args.batch
        )
        print(f"cancelled {counted(count, 'queued job')}")
        return
    change = admin.cancel_job(conn, args.id, tenant=args.tenant, reason=args.reason)
    if change is admin.Change.MISSING:
        raise CliError(f"no job {args.id}")
    if change is admin.Change.REFUSED:
        raise CliError(f"job {args.id} already finished; nothing to cancel")
    print(f"job {args.id} cancelled")
