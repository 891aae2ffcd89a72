"""`pipeline schedule`: recurring jobs made and steered from the command line."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime, tzinfo
from typing import Any

from pg_pipeline import inputs
from pg_pipeline.commands.api import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    Subcommands,
    add_command,
    argument,
    integer_arg,
    open_db,
    parse_payload,
    printable,
    stage_arg,
    tenant_arg,
    text_arg,
)
from pg_pipeline.commands.known_stages import check_stage
from pg_pipeline.inputs import CATCH_UP_MAX
from pg_pipeline.schedules import (
    InvalidSchedule,
    Schedule,
    ScheduleOwnedByCode,
    ScheduleRow,
    check_timezone,
    list_schedules,
    pause_schedule,
    remove_schedule,
    resume_schedule,
    save_schedule,
)

# -- argument types (pg_pipeline.inputs' checks, as the library applies them to a definition)


def _every(text: str) -> float:
    return inputs.every(inputs.number_of_seconds(text))


name_arg = argument(inputs.schedule_name)
cron_arg = argument(inputs.cron)
timezone_arg = argument(inputs.timezone)
every_arg = argument(_every)
catch_up_arg = integer_arg(1, CATCH_UP_MAX)


# -- the commands -------------------------------------------------------------------------------


def add_commands(sub: Subcommands) -> None:
    s = add_command(
        sub,
        "schedule",
        run,
        "recurring jobs: add, list, pause, resume, remove",
        "Recurring jobs. Any running worker fires them; schedules declared in code "
        "with pg_pipeline.schedule() are written by each worker when it starts.",
    )
    ssub = s.add_subparsers(dest="schedule_command", required=True)
    a = ssub.add_parser("add", help="add or replace a schedule made from the command line")
    a.add_argument("name", type=name_arg)
    a.add_argument("--stage", required=True, type=stage_arg)
    timing = a.add_mutually_exclusive_group(required=True)
    timing.add_argument(
        "--cron", type=cron_arg, help="cron expression, e.g. '0 2 * * *' or '@hourly'"
    )
    timing.add_argument("--every", type=every_arg, help="period in seconds (more than 0)")
    a.add_argument("--payload", default="{}", help="JSON object for each job (default {})")
    a.add_argument("--tenant", type=tenant_arg)
    a.add_argument(
        "--timezone", type=timezone_arg, help="IANA timezone the cron is read in (default UTC)"
    )
    a.add_argument(
        "--catch-up",
        type=catch_up_arg,
        default=1,
        help=f"missed fire times run after an outage, the latest ones (1..{CATCH_UP_MAX})",
    )
    a.add_argument("--app", action="append", type=text_arg, default=[])
    ls = ssub.add_parser("list", help="every schedule, with its next fire time")
    ls.add_argument("--json", action="store_true", help="one JSON object per line")
    for verb, text in (
        ("remove", "delete a schedule"),
        ("pause", "stop firing until resumed"),
        ("resume", "fire again, from the next fire time after now"),
    ):
        p = ssub.add_parser(verb, help=text)
        p.add_argument("name", type=name_arg)


def _add(args: argparse.Namespace) -> int:
    payload = parse_payload(args.payload)
    try:
        item = Schedule.define(
            args.name,
            stage=args.stage,
            cron=args.cron,
            every=args.every,
            payload=payload,
            tenant_id=args.tenant,
            timezone=args.timezone,
            catch_up=args.catch_up,
        )
    except InvalidSchedule as exc:
        raise CliError(str(exc), EXIT_USAGE) from exc
    _, conn = open_db()
    with conn:
        # Each fire validates the payload again, with the firing worker's model.
        check_stage(conn, item.stage, args.app, item.payload)
        try:
            new, next_fire_at = save_schedule(conn, item)
        except ScheduleOwnedByCode as exc:
            raise CliError(str(exc), EXIT_USAGE) from exc
    when = _local(next_fire_at, item.timing.timezone)
    print(
        f"schedule {printable(item.name)} {'added' if new else 'updated'}: "
        f"{printable(item.stage)}, {item.timing.describe()}, next fire {when}"
    )
    return EXIT_OK


def _local(moment: datetime | None, timezone: str) -> str:
    """A time in the schedule's own timezone, with its offset: unambiguous, and 02:00 reads as
    the 02:00 the cron says. In UTC when this system's tzdata lacks the timezone (the row was
    written by one whose tzdata has it): the offset still says which time it is."""
    if moment is None:
        return "-"
    try:
        zone: tzinfo = check_timezone(timezone)
    except InvalidSchedule:
        zone = UTC
    return moment.astimezone(zone).isoformat(timespec="seconds")


def _as_json(row: ScheduleRow) -> dict[str, Any]:
    return {
        "name": row.name,
        "stage": row.stage,
        "cron": row.timing.cron,
        "every_s": row.timing.every_s,
        "timezone": row.timing.timezone,
        "payload": row.payload,
        "tenant_id": row.tenant_id,
        "catch_up": row.catch_up,
        "source": row.source,
        "paused": row.paused,
        "next_fire_at": None if row.paused else row.next_fire_at.isoformat(),
        "last_fired_at": None if row.last_fired_at is None else row.last_fired_at.isoformat(),
        "last_job_id": row.last_job_id,
        "last_error": row.last_error,
    }


def _print_table(rows: list[ScheduleRow]) -> None:
    header = ("name", "stage", "schedule", "next fire", "paused", "last fired", "source")
    lines = [
        (
            printable(row.name),
            printable(row.stage),
            printable(row.timing.describe()),
            "-" if row.paused else _local(row.next_fire_at, row.timing.timezone),
            "yes" if row.paused else "no",
            _local(row.last_fired_at, row.timing.timezone),
            row.source,
        )
        for row in rows
    ]
    widths = [max(len(cells[i]) for cells in [header, *lines]) for i in range(len(header))]
    for cells in [header, *lines]:
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
    for row in rows:
        if row.last_error:
            reason = " ".join(row.last_error.split())
            print(f"{printable(row.name)}: {printable(reason)}")


def run(args: argparse.Namespace) -> int:
    if args.schedule_command == "add":
        return _add(args)
    _, conn = open_db()
    with conn:
        if args.schedule_command == "list":
            rows = list_schedules(conn)
            if args.json:
                for row in rows:
                    print(json.dumps(_as_json(row)))
            elif rows:
                _print_table(rows)
            else:
                print("no schedules")
        elif args.schedule_command == "remove":
            source = remove_schedule(conn, args.name)
            if source is None:
                raise CliError(f"no schedule {args.name!r}")
            print(f"schedule {printable(args.name)} removed")
            if source == "code":
                print(
                    f"pipeline: note: {args.name!r} was declared in code; the next worker to "
                    "start with that code adds it again (pause it to stop it for good)",
                    file=sys.stderr,
                )
        elif args.schedule_command == "pause":
            if not pause_schedule(conn, args.name):
                raise CliError(f"no schedule {args.name!r}")
            print(f"schedule {printable(args.name)} paused")
        elif args.schedule_command == "resume":
            try:
                following = resume_schedule(conn, args.name)
            except InvalidSchedule as exc:  # its timezone or cron, unknown to this system
                raise CliError(f"schedule {args.name!r} cannot be resumed here: {exc}") from exc
            if following is None:
                raise CliError(f"no schedule {args.name!r}")
            when = following.isoformat(timespec="seconds")
            print(f"schedule {printable(args.name)} resumed: next fire {when}")
    return EXIT_OK
