"""Budgets per tenant: a limit on its usage of a counter (or its cost in money) per UTC day or
month, for every stage or one. Past the limit the claim leaves the tenant's jobs of the stages
it covers queued (sql/functions/claim_groups.sql); at the warning level status and the metrics
say so. `pipeline budgets` and the dashboard's tenants page read and set them here."""

from __future__ import annotations

from typing import Any

import psycopg

from pg_pipeline import inputs
from pg_pipeline.admin.status import BudgetUse, read_budgets
from pg_pipeline.queries import Q

LIST_LIMIT = 1000  #: budgets `budgets list` shows at most
#: The counter that means money: every priced counter times its price.
COST = "cost"
PERIODS = ("day", "month")


def set_budget(
    conn: psycopg.Connection[Any],
    tenant_id: str,
    limit: float,
    *,
    counter: str,
    per: str,
    stage: str | None = None,
    warn: float = 0.8,
) -> None:
    """Set (or change) a budget: it counts from the next claim, and a higher limit resumes a
    tenant whose budget was spent."""
    if per not in PERIODS:
        raise ValueError(f"a budget is per day or per month, not {per!r}")
    params = {
        "tenant_id": tenant_id,
        "stage": stage,
        "counter": counter,
        "per": per,
        # nan passes the table's check (nan >= 0 in Postgres) and no usage ever reaches it
        "limit": inputs.budget_limit(limit),
        "warn": warn,
    }
    conn.execute(Q["set_budget"], params)


def clear_budget(
    conn: psycopg.Connection[Any],
    tenant_id: str,
    *,
    stage: str | None = None,
    counter: str | None = None,
    per: str | None = None,
) -> int:
    """Remove the tenant's budgets for `stage` (None: its budgets for every stage), of
    `counter` and `per` when given; how many went."""
    params = {"tenant_id": tenant_id, "stage": stage, "counter": counter, "per": per}
    return len(conn.execute(Q["clear_budget"], params).fetchall())


def budgets(
    conn: psycopg.Connection[Any], tenant: str | None = None, limit: int = LIST_LIMIT
) -> list[BudgetUse]:
    """Every budget with its use in the current period and its state: exhausted ones first,
    then those past their warning level, then by tenant."""
    return read_budgets(conn, limit, tenant)[0]
