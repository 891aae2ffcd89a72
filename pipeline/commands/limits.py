"""`pipeline limits`: rate limits in units per key (docs/limits.md)."""

from __future__ import annotations

import argparse
import json

from pg_pipeline.admin.limits import clear_limit, limit_rows, set_limit
from pg_pipeline.commands.api import (
    EXIT_OK,
    CliError,
    Subcommands,
    add_command,
    argument,
    integer_arg,
    open_db,
    printable,
)
from pg_pipeline.limits import KEY_MAX, NAME_MAX, PER_MAX_S
from pg_pipeline.vocabulary import ONE_KEY


def _name(text: str) -> str:
    if not text or len(text) > NAME_MAX or not text.isprintable() or text != text.strip():
        raise ValueError(f"a limit's name is 1..{NAME_MAX} printable characters, not {text!r}")
    return text


def _key(text: str) -> str:
    if not text or len(text) > KEY_MAX or not text.isprintable() or text != text.strip():
        raise ValueError(f"a key is 1..{KEY_MAX} printable characters, not {text!r}")
    return text


name_arg = argument(_name)
key_arg = argument(_key)


def add_commands(sub: Subcommands) -> None:
    t = add_command(
        sub,
        "limits",
        run,
        "rate limits: units per key per window",
        "A capacity set here wins over a stage's Limit(capacity=) and applies at every "
        "worker's next claim. A job a limit holds back stays queued, without an attempt.",
    )
    tsub = t.add_subparsers(dest="limits_command", required=True)
    s = tsub.add_parser("set", help="let NAME's keys take UNITS per --per seconds")
    s.add_argument("name", type=name_arg)
    s.add_argument("units", type=integer_arg(0, 2**63 - 1), help="units per window (0 pauses)")
    s.add_argument(
        "--per", required=True, type=integer_arg(1, PER_MAX_S), help="the window, in seconds"
    )
    s.add_argument(
        "--key", type=key_arg, default=ONE_KEY, help="one key's capacity (default: every key's)"
    )
    c = tsub.add_parser("clear", help="remove NAME's capacity: of one --key, or of all")
    c.add_argument("name", type=name_arg)
    c.add_argument("--key", type=key_arg)
    ls = tsub.add_parser("list", help="capacities, units in the window and jobs waiting")
    ls.add_argument("--name", type=name_arg)
    ls.add_argument("--json", action="store_true", help="one JSON object per line")


def run(args: argparse.Namespace) -> int:
    _, conn = open_db()
    with conn:
        if args.limits_command == "set":
            set_limit(conn, args.name, args.units, per=args.per, key=args.key)
            which = "every key" if args.key == ONE_KEY else f"key {printable(args.key)}"
            print(
                f"limit {printable(args.name)}: {args.units} unit(s) per {args.per} s for {which}"
            )
        elif args.limits_command == "clear":
            cleared = clear_limit(conn, args.name, args.key)
            if not cleared:
                raise CliError(f"limit {printable(args.name)} has no capacity to clear here")
            keys = ", ".join(printable(k) for k in cleared)
            print(f"limit {printable(args.name)}: capacity cleared for {keys}")
        else:
            rows = limit_rows(conn, args.name)
            if args.json:
                for row in rows:
                    print(json.dumps(row._asdict()))
                return EXIT_OK
            print(f"{'limit':<20}{'key':<24}{'capacity':>14}{'used':>10}{'waiting':>9}  source")
            for row in rows:
                capacity = "-" if row.capacity is None else f"{row.capacity}/{row.per_seconds}s"
                source = "" if row.source is None else row.source
                if row.capacity_key == ONE_KEY and row.key != ONE_KEY:
                    source += " (*)"
                print(
                    f"{printable(row.name):<20}{printable(row.key):<24}{capacity:>14}"
                    f"{row.used:>10}{row.waiting:>9}  {source}"
                )
            if not rows:
                print("no rate limits: `pipeline limits set NAME UNITS --per SECONDS`")
    return EXIT_OK
