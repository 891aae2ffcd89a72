"""Budgets: past its limit a tenant's claims stop, its jobs staying queued without an attempt or
a slot; a higher limit resumes it at the next claim; per stage; in money through the prices
(sql/functions/claim_groups.sql, pipeline/admin/budgets.py)."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool
from pydantic import BaseModel

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import Context, JobRequest, enqueue_many
from pg_pipeline.admin.budgets import budgets, clear_budget, set_budget
from pg_pipeline.admin.metrics import QueueCollector
from pg_pipeline.admin.status import read_status
from pg_pipeline.admin.tenants import set_weight
from pg_pipeline.commands.status import render
from pg_pipeline.stage import Registry, stage
from pg_pipeline.store import JobStore
from pg_pipeline.testing import drain

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=9)
REG = Registry()


class Pages(BaseModel):
    pages: int


@stage("paged", registry=REG)
def paged(job: Pages, ctx: Context) -> None:
    ctx.usage(pages=job.pages)


def use(conn: Conn, tenant: str, stage: str, counter: str, amount: float) -> None:
    """Usage as ended attempts leave it: added to the tenant's rollup of the UTC day."""
    conn.execute(
        "INSERT INTO pipeline.usage_by_day AS u "
        "(day, tenant_id, stage, counter, shard, amount, attempts) "
        "VALUES ((now() AT TIME ZONE 'UTC')::date, %s, %s, %s, 0, %s, 1) "
        "ON CONFLICT (tenant_id, counter, day, stage, shard) "
        "DO UPDATE SET amount = u.amount + excluded.amount, attempts = u.attempts + 1",
        (tenant, stage, counter, amount),
    )


def queue(conn: Conn, tenants: dict[str, int], stage: str = "noop") -> None:
    enqueue_many(
        conn,
        [JobRequest(stage, {"n": i}, tenant_id=t) for t, n in tenants.items() for i in range(n)],
    )


def claimed(store: JobStore, stages: list[str] | None = None) -> Counter[str]:
    return Counter(
        j.tenant_id for j in store.claim(stages or ["noop"], 100, WORKER, {}) if j.tenant_id
    )


def untouched(conn: Conn, tenant: str) -> tuple[Any, ...] | None:
    """(queued jobs, attempts spent, slots held) of the tenant's jobs."""
    return conn.execute(
        "SELECT count(*) FILTER (WHERE status = 'queued'), sum(attempts), "
        "count(*) FILTER (WHERE holds_slot) FROM pipeline.active_jobs WHERE tenant_id = %s",
        (tenant,),
    ).fetchone()


def test_a_spent_budget_stops_the_tenants_claims_until_it_is_raised(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    set_budget(conn, "acme", 10, counter="pages", per="day")
    use(conn, "acme", "noop", "pages", 10)
    queue(conn, {"acme": 5, "beta": 5})
    assert claimed(store) == {"beta": 5}
    assert untouched(conn, "acme") == (5, 0, 0)
    [budget] = budgets(conn)
    assert (budget.used, budget.limit, budget.state) == (10, 10, "exhausted")

    set_budget(conn, "acme", 20, counter="pages", per="day")  # resumed at the next claim
    assert claimed(store) == {"acme": 5}
    assert budgets(conn)[0].state == "ok"  # 10 of 20


def test_usage_stages_report_stops_the_tenant_within_one_claim_of_its_limit(
    db_url: str, conn: Conn
) -> None:
    set_budget(conn, "acme", 10, counter="pages", per="day")
    jobs = [JobRequest("paged", {"pages": 4}, tenant_id="acme") for _ in range(5)]
    jobs += [JobRequest("paged", {"pages": 4}, tenant_id="beta") for _ in range(5)]
    enqueue_many(conn, jobs, registry=REG)
    drained = drain(db_url, registry=REG)  # one job a claim, as each claim sees the usage
    done = Counter(
        t
        for (t,) in conn.execute(
            "SELECT tenant_id FROM pipeline.jobs WHERE status = 'done'"
        ).fetchall()
    )
    # 4 + 4 < 10: a third claim; 12 >= 10: no fourth. beta has no budget.
    assert done == {"acme": 3, "beta": 5} and len(drained.done) == 8
    assert untouched(conn, "acme") == (2, 0, 0)
    [budget] = budgets(conn)
    assert (budget.used, budget.state) == (12, "exhausted")
    set_budget(conn, "acme", 20, counter="pages", per="day")
    assert len(drain(db_url, registry=REG).done) == 2


def test_below_its_limit_a_tenant_is_claimed_and_at_its_warning_level_alerted(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    set_budget(conn, "acme", 100, counter="tokens_in", per="month", warn=0.5)
    use(conn, "acme", "noop", "tokens_in", 49)
    queue(conn, {"acme": 3})
    assert budgets(conn)[0].state == "ok"
    assert "budgets at or past their warning level: none (1 set)" in render(read_status(conn))
    use(conn, "acme", "noop", "tokens_in", 1)
    [budget] = budgets(conn)
    assert budget.state == "warning" and budget.alerting
    text = render(read_status(conn))
    assert "budgets at or past their warning level (1 of 1)" in text
    assert any(
        line.split()[:6] == ["acme", "(every)", "tokens_in", "month", "50", "100"]
        for line in text.splitlines()
    ), text
    assert claimed(store) == {"acme": 3}, "a warning stopped the claims"


def test_a_limit_that_is_not_a_number_is_refused(conn: Conn) -> None:
    """nan passes the table's check (nan >= 0 in Postgres) and no usage reaches it: a budget
    that never stops its tenant."""
    for limit in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValueError, match="limit"):
            set_budget(conn, "acme", limit, counter="pages", per="day")
    assert budgets(conn) == []
    # Nor does the table take one written by hand (0027).
    for text in ("NaN", "Infinity"):
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(
                "INSERT INTO pipeline.budgets (tenant_id, counter, per, budget_limit)"
                " VALUES ('acme', 'pages', 'day', %s::float8)",
                (text,),
            )


def test_a_stages_budget_stops_that_stage_alone(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    set_budget(conn, "acme", 5, counter="pages", per="day", stage="capped")
    use(conn, "acme", "capped", "pages", 5)
    use(conn, "acme", "noop", "pages", 100)  # another stage's usage counts for it alone
    queue(conn, {"acme": 2}, stage="capped")
    queue(conn, {"acme": 2}, stage="noop")
    got = store.claim(["capped", "noop"], 10, WORKER, {})
    assert sorted(j.type for j in got) == ["noop", "noop"]
    assert clear_budget(conn, "acme", stage="capped") == 1
    assert [j.type for j in store.claim(["capped"], 10, WORKER, {})] == ["capped", "capped"]


def test_a_budget_in_money_counts_every_priced_counter(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    conn.execute(
        "INSERT INTO pipeline.prices (counter, price, currency) "
        "VALUES ('pages', 0.01, 'EUR'), ('tokens_out', 0.001, 'EUR')"
    )
    set_budget(conn, "acme", 0.5, counter="cost", per="day")
    queue(conn, {"acme": 4})
    use(conn, "acme", "noop", "pages", 30)  # 0.30
    use(conn, "acme", "noop", "tokens_out", 150)  # 0.15: 0.45 in all, past 80%
    assert [(b.used, b.state) for b in budgets(conn)] == [(pytest.approx(0.45), "warning")]
    assert claimed(store) == {"acme": 4}
    use(conn, "acme", "noop", "tokens_out", 50)  # 0.50: the limit
    assert budgets(conn)[0].state == "exhausted"
    queue(conn, {"acme": 1})
    assert claimed(store) == {}
    # The new job queued; the attempts are the four claimed before the limit's.
    assert untouched(conn, "acme") == (1, 4, 0)


def test_a_budget_counts_the_current_day_alone(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    set_budget(conn, "acme", 10, counter="pages", per="day")
    conn.execute(
        "INSERT INTO pipeline.usage_by_day (day, tenant_id, stage, counter, shard, amount, "
        "attempts) VALUES ((now() AT TIME ZONE 'UTC')::date - 1, 'acme', 'noop', 'pages', 0, "
        "1000, 1)"
    )
    queue(conn, {"acme": 2})
    assert claimed(store) == {"acme": 2}, "yesterday's usage counted against today's budget"


def test_the_metrics_carry_budgets_use_and_alert_and_weights(
    conn: Conn, pool: ConnectionPool
) -> None:
    set_budget(conn, "acme", 10, counter="pages", per="day")
    set_budget(conn, "beta", 10, counter="pages", per="month", stage="noop")
    use(conn, "acme", "noop", "pages", 9)
    use(conn, "beta", "noop", "pages", 12)
    set_weight(conn, "acme", 3)
    families = {f.name: f for f in QueueCollector(pool).collect()}
    used = {
        (s.labels["tenant"], s.labels["stage"], s.labels["per"]): s.value
        for s in families["pipeline_budget_used_ratio"].samples
    }
    assert used == {("acme", "", "day"): pytest.approx(0.9), ("beta", "noop", "month"): 1.2}
    alert = {s.labels["tenant"]: s.value for s in families["pipeline_budget_alert"].samples}
    assert alert == {"acme": 1, "beta": 2}
    weights = [(s.labels["tenant"], s.value) for s in families["pipeline_tenant_weight"].samples]
    assert weights == [("acme", 3.0)]
