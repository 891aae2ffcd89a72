"""What attempts consumed, as operators read it: `pipeline usage`, the dashboard's costs, the
metrics; and the price table that makes money of it. Every read takes `tenant`: None for every
tenant, else that tenant's rows alone. Reports of a window read the daily rollup
(pipeline.usage_by_day), a run's its own jobs and attempts (sql/queries_usage.sql)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

import psycopg

from pg_pipeline.queries import Q

By = Literal["stage", "tenant", "day", "run"]
BY: tuple[By, ...] = ("stage", "tenant", "day", "run")
#: the currency of the first price set when none is given
DEFAULT_CURRENCY = "USD"
#: runs `--by run` reports at most, newest first
RUNS_LIMIT = 100


@dataclass(frozen=True)
class Price:
    counter: str
    price: float  #: money per unit of the counter
    currency: str


@dataclass(frozen=True)
class UsageLine:
    """One counter of one stage, tenant, day or run."""

    key: str | None  #: the stage, tenant (None: untenanted jobs), day (ISO) or run id
    counter: str
    amount: float
    attempts: int  #: attempts that added to it
    cost: float | None  #: amount x the counter's price; None without a price


class CurrencyMismatch(ValueError):
    """A price in another currency than the table's."""


def prices(conn: psycopg.Connection[Any]) -> dict[str, Price]:
    return {row[0]: Price(*row) for row in conn.execute(Q["prices"])}


def currency_of(table: dict[str, Price]) -> str | None:
    """The price table's one currency; None while it is empty."""
    return next((p.currency for p in table.values()), None)


def set_price(
    conn: psycopg.Connection[Any], counter: str, price: float, currency: str | None = None
) -> Price:
    """Set `counter`'s price in the table's currency (`currency`, else the table's, else
    DEFAULT_CURRENCY); CurrencyMismatch when other counters are priced in another."""
    table = prices(conn)
    others = {p.currency for p in table.values() if p.counter != counter}
    chosen = currency or next(iter(others), None) or DEFAULT_CURRENCY
    row = conn.execute(
        Q["set_price"], {"counter": counter, "price": price, "currency": chosen}
    ).fetchone()
    if row is None:
        raise CurrencyMismatch(
            f"the prices are in {', '.join(sorted(others))}: one currency for all "
            f"(clear them first to change it)"
        )
    return Price(counter, price, chosen)


def clear_price(conn: psycopg.Connection[Any], counter: str) -> bool:
    """False when the counter had no price."""
    return conn.execute(Q["clear_price"], {"counter": counter}).fetchone() is not None


def _lines(
    rows: list[tuple[Any, ...]], table: dict[str, Price], key_of: Any = None
) -> list[UsageLine]:
    lines = []
    for key, counter, amount, attempts in rows:
        price = table.get(counter)
        lines.append(
            UsageLine(
                None if key is None else str(key_of(key) if key_of else key),
                str(counter),
                float(amount),
                int(attempts),
                None if price is None else float(amount) * price.price,
            )
        )
    return lines


def usage(
    conn: psycopg.Connection[Any],
    *,
    by: By = "stage",
    since: date,
    tenant: str | None = None,
    run_id: int | None = None,
) -> list[UsageLine]:
    """Counters per stage, tenant or day since `since` (a UTC day), from the daily rollup; per
    run, the runs with a job finished since then (RUNS_LIMIT, newest first) or the run
    `run_id` alone (its stages' lines, keyed by stage, whatever `by` says)."""
    table = prices(conn)
    if run_id is not None:
        return run_usage(conn, run_id, tenant, table)
    if by == "run":
        found = conn.execute(
            Q["usage_runs"], {"since": since, "tenant": tenant, "limit": RUNS_LIMIT}
        ).fetchall()
        lines = []
        for (run,) in found:
            per_stage = run_usage(conn, int(run), tenant, table)
            lines.extend(_summed(str(run), per_stage))
        return lines
    query = {"stage": Q["usage_by_stage"], "tenant": Q["usage_by_tenant"], "day": Q["usage_by_day"]}
    rows = conn.execute(query[by], {"since": since, "tenant": tenant}).fetchall()
    return _lines(rows, table)


def run_usage(
    conn: psycopg.Connection[Any],
    run_id: int,
    tenant: str | None = None,
    table: dict[str, Price] | None = None,
) -> list[UsageLine]:
    """What a run's attempts consumed, per stage and counter (key: the stage)."""
    table = prices(conn) if table is None else table
    rows = conn.execute(Q["usage_of_run"], {"run_id": run_id, "tenant": tenant}).fetchall()
    return _lines(rows, table)


def _summed(key: str, lines: list[UsageLine]) -> list[UsageLine]:
    """`lines` summed over their keys, per counter, under `key`."""
    amounts: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    costs: dict[str, float | None] = {}
    for line in lines:
        amounts[line.counter][0] += line.amount
        amounts[line.counter][1] += line.attempts
        if line.cost is not None:
            costs[line.counter] = (costs.get(line.counter) or 0.0) + line.cost
        else:
            costs.setdefault(line.counter, None)
    return [
        UsageLine(key, counter, amount, int(attempts), costs[counter])
        for counter, (amount, attempts) in sorted(amounts.items())
    ]


def cost_of(lines: list[UsageLine]) -> float | None:
    """The money of `lines`; None when none of their counters has a price."""
    priced = [line.cost for line in lines if line.cost is not None]
    return sum(priced) if priced else None


def costs_by_key(lines: list[UsageLine]) -> dict[str | None, float | None]:
    """Each key's money, in the order the keys come."""
    grouped: dict[str | None, list[UsageLine]] = defaultdict(list)
    for line in lines:
        grouped[line.key].append(line)
    return {key: cost_of(group) for key, group in grouped.items()}


def job_usage(
    conn: psycopg.Connection[Any], run_id: int, tenant: str | None = None
) -> dict[int, dict[str, float]]:
    """What each job of a run consumed over its attempts: job id -> counter -> amount."""
    found: dict[int, dict[str, float]] = defaultdict(dict)
    for job_id, counter, amount in conn.execute(
        Q["usage_of_jobs"], {"run_id": run_id, "tenant": tenant}
    ):
        found[int(job_id)][str(counter)] = float(amount)
    return dict(found)


def money(amounts: dict[str, float], table: dict[str, Price]) -> float | None:
    """The money of counter amounts; None when none has a price."""
    priced = [amount * table[c].price for c, amount in amounts.items() if c in table]
    return sum(priced) if priced else None


@dataclass(frozen=True)
class TenantCost:
    tenant_id: str | None  #: None: the untenanted jobs
    cost: float | None  #: None when none of its counters has a price
    cpu_s: float
    attempts: int  #: attempts the workers measured


def tenants_by_cost(
    conn: psycopg.Connection[Any], since: date, tenant: str | None = None, limit: int = 50
) -> list[TenantCost]:
    """Tenants since a day, the costliest first (then the most CPU): the dashboard's tenants."""
    lines = usage(conn, by="tenant", since=since, tenant=tenant)
    costs = costs_by_key(lines)
    cpu = {line.key: line.amount for line in lines if line.counter == "cpu_s"}
    attempts = {line.key: line.attempts for line in lines if line.counter == "wall_s"}
    rows = [
        TenantCost(key, cost, cpu.get(key, 0.0), attempts.get(key, 0))
        for key, cost in costs.items()
    ]
    rows.sort(key=lambda r: (-(r.cost or 0.0), -r.cpu_s, r.tenant_id or ""))
    return rows[:limit]
