"""The benchmarks' reset brings back every table their drains write to its state before, and
keeps the settings a benchmark makes before it (the tenants' weights)."""

from __future__ import annotations

from typing import Any

import psycopg

import benchmarks.fair_app  # noqa: F401  registers bench_nap
from benchmarks.bench_app import BENCH_LIMIT  # also registers bench_noop and bench_limited
from benchmarks.reset import reset
from benchmarks.tenants import jobs
from pg_pipeline import JobRequest, enqueue_many
from pg_pipeline.admin.limits import set_limit
from pg_pipeline.admin.tenants import set_cap, set_weight
from pg_pipeline.testing import drain


def rows_by_table(conn: psycopg.Connection[Any]) -> dict[str, int]:
    tables = conn.execute(
        "SELECT format('%I.%I', schemaname, relname) FROM pg_stat_user_tables "
        "WHERE schemaname = 'pipeline' ORDER BY 1"
    ).fetchall()
    counts = {}
    for (table,) in tables:
        [(n,)] = conn.execute(f"SELECT count(*) FROM {table}").fetchall()
        counts[table] = n
    return counts


def test_the_reset_empties_what_the_benchmarks_drains_wrote_and_keeps_the_weights(
    conn: psycopg.Connection[Any],
) -> None:
    # fairness: weights set once, before the reset of each window
    for tenant, weight in (("t0", 1.0), ("t1", 2.0)):
        set_weight(conn, tenant, weight)
    before = rows_by_table(conn)
    # tenants: capped tenants beside untenanted jobs
    for tenant in ("t0", "t1"):
        set_cap(conn, tenant, "bench_noop", 1000)
    enqueue_many(conn, [*jobs(30, "t0"), *jobs(30, "t1"), *jobs(30, None)])
    # flow: every job charged to a limit per tenant
    set_limit(conn, BENCH_LIMIT, 10**12, per=60)
    enqueue_many(conn, [JobRequest("bench_limited", {}, tenant_id=t) for t in ("t0", "t1")] * 10)
    # fairness: the napping stage
    enqueue_many(conn, [JobRequest("bench_nap", {"ms": 0}, tenant_id=t) for t in ("t0", "t1")])
    conn.commit()
    assert drain(conn, app=["benchmarks.bench_app", "benchmarks.fair_app"]).ok
    written = {t for t, n in rows_by_table(conn).items() if n != before[t]}
    assert {
        "pipeline.job_history",
        "pipeline.tenant_passes",
        "pipeline.freed_slots",
        "pipeline.rate_limit_used",
    } <= written

    reset(conn)

    after = rows_by_table(conn)
    assert {t: after[t] for t in written} == {t: before[t] for t in written}
    assert after["pipeline.tenant_weights"] == before["pipeline.tenant_weights"] == 2
