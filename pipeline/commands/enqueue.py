"""`pipeline enqueue`: one job, from the command line; prints its id."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

from pg_pipeline import inputs
from pg_pipeline.commands.api import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    Subcommands,
    add_command,
    argument,
    instant_arg,
    load_apps,
    open_db,
    parse_payload,
    priority_arg,
    seconds_arg,
    stage_arg,
    tenant_arg,
    text_arg,
)
from pg_pipeline.commands.known_stages import one_line
from pg_pipeline.enqueue import enqueue
from pg_pipeline.errors import InvalidPayload, UnknownStage
from pg_pipeline.stage import REGISTRY
from pg_pipeline.validation import InvalidJob
from pg_pipeline.vocabulary import DEDUP_KEY_MAX_BYTES, DELAY_MAX_S


def add_commands(sub: Subcommands) -> None:
    add_arguments(add_command(sub, "enqueue", run, "enqueue one job; prints its id"))


def add_arguments(e: argparse.ArgumentParser) -> None:
    """The arguments of `pipeline enqueue`, which `pipeline jobs enqueue` takes too."""
    e.add_argument("type", type=stage_arg)
    e.add_argument("payload", help="JSON object")
    e.add_argument(
        "--app",
        action="append",
        type=text_arg,
        default=[],
        help="module defining the stage; without it, a stage a worker recorded is checked "
        "against its recorded JSON schema",
    )
    e.add_argument(
        "--no-validate",
        dest="validate",
        action="store_false",
        help="store the payload as given; the worker that claims the job validates it",
    )
    e.add_argument("--tenant", type=tenant_arg)
    e.add_argument("--priority", type=priority_arg, help="higher runs first; -32768..32767")
    when = e.add_mutually_exclusive_group()
    when.add_argument(
        "--delay",
        type=seconds_arg(DELAY_MAX_S),
        help="seconds from now before it may run (0 or more)",
    )
    when.add_argument(
        "--at",
        type=instant_arg,
        help="ISO 8601 time with a UTC offset before which it may not run, e.g. 2026-12-01T09:30Z",
    )
    e.add_argument(
        "--dedup-key",
        type=argument(inputs.dedup_key),
        help=f"at most {DEDUP_KEY_MAX_BYTES} bytes: while a job holds it, enqueueing the key "
        "again returns that job",
    )


def run(args: argparse.Namespace) -> int:
    payload = parse_payload(args.payload)
    load_apps(args.app)
    if args.app and args.type not in REGISTRY:  # the code given decides
        raise CliError(str(UnknownStage(args.type, REGISTRY.names())), EXIT_USAGE)
    _, conn = open_db()
    with conn:
        try:
            job_id = enqueue(
                conn,
                args.type,
                payload,
                tenant_id=args.tenant,
                priority=args.priority,
                run_after=timedelta(seconds=args.delay) if args.delay else not_before(args.at),
                dedup_key=args.dedup_key,
                validate=args.validate,
            )
        except (UnknownStage, InvalidPayload, InvalidJob) as exc:
            raise CliError(one_line(exc, args.type), EXIT_USAGE) from exc
    print(job_id)
    return EXIT_OK


def not_before(at: datetime | None) -> datetime | None:
    """`--at`'s time as enqueue's run_after. One already past means "now" (None: the database's
    clock), so that it runs in its turn rather than ahead of jobs queued before it."""
    return at if at is not None and at > datetime.now(UTC) else None
