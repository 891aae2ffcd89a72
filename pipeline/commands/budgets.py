"""`pipeline budgets`: per-tenant limits on usage or cost per day or month."""

from __future__ import annotations

import argparse
import json
import sys

from pg_pipeline.admin.budgets import COST, PERIODS, budgets, clear_budget, set_budget
from pg_pipeline.admin.status import BudgetUse
from pg_pipeline.admin.usage import prices
from pg_pipeline.commands.api import (
    EXIT_OK,
    CliError,
    Subcommands,
    add_command,
    budget_limit_arg,
    open_db,
    printable,
    share_arg,
    stage_arg,
    tenant_arg,
    text_arg,
)
from pg_pipeline.commands.known_stages import check_stage


def add_commands(sub: Subcommands) -> None:
    b = add_command(
        sub,
        "budgets",
        run,
        "per-tenant limits on usage or cost per day or month",
        "Past its limit a tenant's new claims stop (its jobs stay queued, no attempt spent) until "
        "the next UTC day or month, or a higher limit; at the warning level `pipeline status` "
        "and the metrics say so (docs/fairness.md).",
    )
    bsub = b.add_subparsers(dest="budgets_command", required=True)
    s = bsub.add_parser("set", help="limit TENANT's usage of a counter, or its cost")
    s.add_argument("tenant", type=tenant_arg)
    s.add_argument("limit", type=budget_limit_arg, help="in the counter's units, or money")
    s.add_argument(
        "--counter",
        required=True,
        type=text_arg,
        help=f"a usage counter a stage reports (pages, tokens_in, cpu_s, ...), or {COST!r}",
    )
    s.add_argument("--per", required=True, choices=PERIODS, help="the period (UTC)")
    s.add_argument("--stage", type=stage_arg, help="this stage alone (default: every stage)")
    s.add_argument(
        "--warn", type=share_arg, default=0.8, help="share of the limit that warns (0.8)"
    )
    s.add_argument("--app", action="append", type=text_arg, default=[])
    c = bsub.add_parser("clear", help="remove TENANT's budgets")
    c.add_argument("tenant", type=tenant_arg)
    c.add_argument("--stage", type=stage_arg, help="its budgets for this stage alone")
    c.add_argument("--counter", type=text_arg, help="of this counter alone")
    c.add_argument("--per", choices=PERIODS, help="of this period alone")
    ls = bsub.add_parser("list", help="budgets, their use this period and their state")
    ls.add_argument("--tenant", type=tenant_arg)
    ls.add_argument("--json", action="store_true", help="one JSON object per line")


def run(args: argparse.Namespace) -> int:
    _, conn = open_db()
    with conn:
        if args.budgets_command == "set":
            if args.stage is not None:
                check_stage(conn, args.stage, args.app)
            set_budget(
                conn,
                args.tenant,
                args.limit,
                counter=args.counter,
                per=args.per,
                stage=args.stage,
                warn=args.warn,
            )
            print(
                f"tenant {printable(args.tenant)}: at most {args.limit:g} "
                f"{_unit(args.counter)} per {args.per} {_where(args.stage)}, "
                f"warning at {args.warn:.0%}"
            )
            if args.counter == COST and not prices(conn):
                # Without a price, cost counts 0: the budget would never stop the tenant.
                print(
                    "pipeline: no prices set, so cost counts 0 and this budget stops no claim "
                    "until `pipeline usage prices set COUNTER PRICE` prices a counter",
                    file=sys.stderr,
                )
        elif args.budgets_command == "clear":
            gone = clear_budget(
                conn, args.tenant, stage=args.stage, counter=args.counter, per=args.per
            )
            if not gone:
                raise CliError(
                    f"tenant {printable(args.tenant)} has no such budget {_where(args.stage)}"
                )
            print(f"tenant {printable(args.tenant)}: {gone} budget(s) {_where(args.stage)} cleared")
        else:
            found = budgets(conn, args.tenant)
            if args.json:
                for budget in found:
                    print(json.dumps(budget._asdict()))
                return EXIT_OK
            if not found:
                print("no budgets")
                return EXIT_OK
            print(_render(found))
    return EXIT_OK


def _render(found: list[BudgetUse]) -> str:
    lines = [
        f"{'tenant':<24}{'stage':<16}{'counter':<14}{'per':<7}{'used':>12}{'limit':>12}"
        f"{'use':>6}  state"
    ]
    for b in found:
        use = f"{b.used / b.limit:.0%}" if b.limit else "-"
        lines.append(
            f"{printable(b.tenant_id):<24}{_stage(b.stage):<16}{printable(b.counter):<14}"
            f"{b.per:<7}{b.used:>12.6g}{b.limit:>12.6g}{use:>6}  {b.state}"
        )
    return "\n".join(lines)


def _stage(stage: str | None) -> str:
    return "(every)" if stage is None else printable(stage)


def _unit(counter: str) -> str:
    return "in cost" if counter == COST else printable(counter)


def _where(stage: str | None) -> str:
    return "for every stage" if stage is None else f"for stage {printable(stage)}"
