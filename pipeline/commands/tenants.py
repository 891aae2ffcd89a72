"""`pipeline tenants`: per-tenant caps on running jobs per stage, and weights in the fair share."""

from __future__ import annotations

import argparse
import json
from typing import Any

import psycopg

from pg_pipeline.admin.budgets import budgets
from pg_pipeline.admin.tenants import (
    clear_cap,
    clear_weight,
    set_cap,
    set_weight,
    tenant_loads,
    tenant_weights,
)
from pg_pipeline.commands.api import (
    EXIT_OK,
    CliError,
    Subcommands,
    add_command,
    cap_arg,
    load_apps,
    open_db,
    printable,
    stage_arg,
    tenant_arg,
    text_arg,
    weight_arg,
)
from pg_pipeline.commands.known_stages import check_stage
from pg_pipeline.recorded_stages import by_name, current, recorded_stages
from pg_pipeline.stage import REGISTRY
from pg_pipeline.wording import counted


def add_commands(sub: Subcommands) -> None:
    t = add_command(
        sub,
        "tenants",
        run,
        "per-tenant caps on running jobs per stage, and weights in the fair share",
        "Caps set here win over @stage(tenant_cap=) and `worker --tenant-cap`; "
        "caps and weights apply to every worker at its next claim (docs/fairness.md).",
    )
    tsub = t.add_subparsers(dest="tenants_command", required=True)
    s = tsub.add_parser("set-cap", help="cap TENANT's running jobs of a stage")
    s.add_argument("tenant", type=tenant_arg)
    s.add_argument("cap", type=cap_arg, help="running jobs at most (0 pauses)")
    s.add_argument("--stage", required=True, type=stage_arg)
    s.add_argument("--app", action="append", type=text_arg, default=[])
    c = tsub.add_parser("clear-cap", help="remove TENANT's cap for a stage")
    c.add_argument("tenant", type=tenant_arg)
    c.add_argument("--stage", required=True, type=stage_arg)
    c.add_argument("--app", action="append", type=text_arg, default=[])
    w = tsub.add_parser(
        "set-weight", help="TENANT's weight: its share of the claims under contention (default 1)"
    )
    w.add_argument("tenant", type=tenant_arg)
    w.add_argument("weight", type=weight_arg, help="1e-6 to 1e6; 2 gets twice a 1's share")
    w.add_argument("--stage", type=stage_arg, help="for this stage alone (default: every stage)")
    w.add_argument("--app", action="append", type=text_arg, default=[])
    cw = tsub.add_parser("clear-weight", help="remove TENANT's weight (back to 1)")
    cw.add_argument("tenant", type=tenant_arg)
    cw.add_argument("--stage", type=stage_arg, help="its weight for this stage alone")
    cw.add_argument("--app", action="append", type=text_arg, default=[])
    ls = tsub.add_parser("list", help="caps, weights, running and queued jobs per (tenant, stage)")
    ls.add_argument("--tenant", type=tenant_arg)
    ls.add_argument("--app", action="append", type=text_arg, default=[])
    ls.add_argument("--json", action="store_true", help="one JSON object per line")


def run(args: argparse.Namespace) -> int:
    _, conn = open_db()
    with conn:
        if args.tenants_command == "set-cap":
            check_stage(conn, args.stage, args.app)
            set_cap(conn, args.tenant, args.stage, args.cap)
            print(
                f"tenant {printable(args.tenant)}: at most "
                f"{counted(args.cap, 'running ' + printable(args.stage) + ' job')}"
            )
        elif args.tenants_command == "clear-cap":
            if not clear_cap(conn, args.tenant, args.stage):
                # A cap of a stage gone from code and records still clears; a name that is
                # neither is most likely a typo, said as such (exit 2).
                check_stage(conn, args.stage, args.app)
                raise CliError(
                    f"tenant {printable(args.tenant)} has no cap for stage {printable(args.stage)}"
                )
            print(f"tenant {printable(args.tenant)}: cap for {printable(args.stage)} cleared")
        elif args.tenants_command == "set-weight":
            if args.stage is not None:
                check_stage(conn, args.stage, args.app)
            set_weight(conn, args.tenant, args.weight, args.stage)
            print(f"tenant {printable(args.tenant)}: weight {args.weight:g} {_where(args.stage)}")
        elif args.tenants_command == "clear-weight":
            if not clear_weight(conn, args.tenant, args.stage):
                raise CliError(
                    f"tenant {printable(args.tenant)} has no weight {_where(args.stage)}"
                )
            print(f"tenant {printable(args.tenant)}: weight {_where(args.stage)} cleared")
        else:
            load_apps(args.app)
            loads = tenant_loads(conn, args.tenant)
            weights = tenant_weights(conn, args.tenant)
            spent = [b for b in budgets(conn, args.tenant) if b.alerting]
            defaults = _default_caps(conn, {load.stage for load in loads})
            if args.json:
                for load in loads:
                    print(
                        json.dumps(
                            {"kind": "cap"}
                            | load._asdict()
                            | {"default_cap": defaults.get(load.stage)}
                        )
                    )
                for weight in weights:
                    print(json.dumps({"kind": "weight"} | weight._asdict()))
                for budget in spent:
                    print(json.dumps({"kind": "budget"} | budget._asdict()))
                return EXIT_OK
            print(f"{'tenant':<24}{'stage':<16}{'cap':>8}{'running':>9}{'queued':>9}")
            for load in loads:
                cap = load.cap if load.cap is not None else defaults.get(load.stage)
                shown = "-" if cap is None else f"{cap}{'' if load.cap is not None else '*'}"
                print(
                    f"{printable(load.tenant_id):<24}{printable(load.stage):<16}{shown:>8}"
                    f"{load.running:>9}{load.queued:>9}"
                )
            if any(load.cap is None for load in loads):
                print("\n* the stage's default cap from code (@stage(tenant_cap=))")
            if weights:
                print(f"\n{'tenant':<24}{'stage':<16}{'weight':>8}")
                for weight in weights:
                    stage = "(every)" if weight.stage is None else printable(weight.stage)
                    print(f"{printable(weight.tenant_id):<24}{stage:<16}{weight.weight:>8g}")
                print("every other tenant weighs 1")
            else:
                print("\nno weights set: every tenant weighs 1")
            for budget in spent:
                stopped = "claims stopped" if budget.state == "exhausted" else "warning"
                print(
                    f"budget: tenant {printable(budget.tenant_id)} used {budget.used:.6g} of "
                    f"{budget.limit:.6g} {printable(budget.counter)} per {budget.per} "
                    f"{_where(budget.stage)}: {stopped}"
                )
    return EXIT_OK


def _where(stage: str | None) -> str:
    return "for every stage" if stage is None else f"for stage {printable(stage)}"


def _default_caps(conn: psycopg.Connection[Any], stages: set[str]) -> dict[str, int | None]:
    """Each stage's @stage(tenant_cap=): from the code loaded here, else as a live worker (or
    the last to start) recorded it."""
    caps: dict[str, int | None] = {}
    for stage in stages:
        spec = REGISTRY.get_or_none(stage)
        if spec is not None:
            caps[stage] = spec.tenant_cap
    missing = sorted(stages - caps.keys())
    if missing:
        found = by_name(recorded_stages(conn, missing))
        for stage, versions in found.items():
            caps[stage] = current(versions)[0].tenant_cap
    return caps
