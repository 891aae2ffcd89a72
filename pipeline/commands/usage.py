"""`pipeline usage`: what attempts consumed per stage, tenant, day or run, in money where the
price table has a price; `pipeline usage prices`: that table."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

import psycopg

from pg_pipeline.admin.usage import (
    BY,
    CurrencyMismatch,
    UsageLine,
    clear_price,
    costs_by_key,
    currency_of,
    prices,
    set_price,
    usage,
)
from pg_pipeline.commands.api import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    Subcommands,
    add_command,
    argument,
    job_id_arg,
    open_db,
    printable,
    tenant_arg,
)
from pg_pipeline.inputs import currency, price, since_day
from pg_pipeline.usage import priced_counter

#: how far back a report reaches when --since is not given
DEFAULT_SINCE = "7d"


def add_commands(sub: Subcommands) -> None:
    u = add_command(
        sub,
        "usage",
        run,
        "what attempts consumed (CPU, pages, tokens...) and what it cost",
        "Counters per stage, tenant, UTC day or run: wall_s and cpu_s as workers measured "
        "them, and what stages reported with ctx.usage(...); in money where `pipeline usage "
        "prices set` gave the counter a price.",
    )
    u.add_argument("--tenant", type=tenant_arg, help="this tenant's jobs alone")
    u.add_argument(
        "--since",
        type=argument(since_day),
        default=since_day(DEFAULT_SINCE),
        help=f"from this UTC day (2026-12-01) or this long ago (7d); default {DEFAULT_SINCE}",
    )
    u.add_argument("--by", choices=BY, default="stage", help="one line per ... (default stage)")
    u.add_argument("--run", type=job_id_arg, help="this run alone, per stage")
    u.add_argument("--json", action="store_true", help="one JSON object per line")
    usub = u.add_subparsers(dest="usage_command")
    p = usub.add_parser("prices", help="the price of a unit of each counter")
    psub = p.add_subparsers(dest="prices_command", required=True)
    s = psub.add_parser("set", help="set COUNTER's price per unit")
    s.add_argument("counter", type=argument(priced_counter))
    s.add_argument("price", type=argument(price), help="money per unit, e.g. 0.0000025")
    s.add_argument("--currency", type=argument(currency), help="EUR, USD...; one for all")
    ls = psub.add_parser("list", help="every price")
    ls.add_argument("--json", action="store_true", help="one JSON object per line")
    c = psub.add_parser("clear", help="remove COUNTER's price")
    c.add_argument("counter", type=argument(priced_counter))


def run(args: argparse.Namespace) -> int:
    _, conn = open_db()
    with conn:
        if args.usage_command == "prices":
            return _prices(conn, args)
        lines = usage(conn, by=args.by, since=args.since, tenant=args.tenant, run_id=args.run)
        currency_ = currency_of(prices(conn))
        if args.json:
            for line in lines:
                money = currency_ if line.cost is not None else None
                print(json.dumps(asdict(line) | {"currency": money}))
            return EXIT_OK
        _print(lines, "stage" if args.run is not None else args.by, currency_)
    return EXIT_OK


def _print(lines: list[UsageLine], by: str, currency_: str | None) -> None:
    if not lines:
        print("no usage recorded in that time")
        return
    costs = costs_by_key(lines)
    print(f"{by:<24}{'counter':<20}{'amount':>16}{'attempts':>10}{'cost':>14}")
    for line in lines:
        key = "(no tenant)" if line.key is None else printable(line.key)
        cost = "" if line.cost is None else f"{line.cost:.4f}"
        print(
            f"{key:<24}{printable(line.counter):<20}{line.amount:>16,.3f}{line.attempts:>10}"
            f"{cost:>14}"
        )
    priced = {k: c for k, c in costs.items() if c is not None}
    if priced:
        print(f"\ncost in {currency_}:")
        for owner, money in priced.items():
            print(f"  {'(no tenant)' if owner is None else printable(owner)}: {money:.4f}")


def _prices(conn: psycopg.Connection[Any], args: argparse.Namespace) -> int:
    if args.prices_command == "set":
        try:
            got = set_price(conn, args.counter, args.price, args.currency)
        except CurrencyMismatch as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
        print(f"{got.counter}: {got.price:g} {got.currency} per unit")
    elif args.prices_command == "clear":
        if not clear_price(conn, args.counter):
            raise CliError(f"counter {printable(args.counter)} has no price")
        print(f"{args.counter}: price cleared")
    else:
        table = prices(conn)
        if args.json:
            for p in table.values():
                print(json.dumps(asdict(p)))
            return EXIT_OK
        if not table:
            print("no prices set: `pipeline usage prices set COUNTER PRICE`")
        for p in table.values():
            print(f"{p.counter:<24}{p.price:>16g} {p.currency}")
    return EXIT_OK
