"""The tenants benchmark's reset brings back every table a drain writes to its state before."""

from __future__ import annotations

from typing import Any

import psycopg

import benchmarks.bench_app  # noqa: F401  registers bench_noop
from benchmarks.tenants import jobs, reset
from pg_pipeline import enqueue_many
from pg_pipeline.admin.tenants import set_cap
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


def test_the_reset_empties_what_a_capped_tenanted_drain_wrote(
    conn: psycopg.Connection[Any],
) -> None:
    before = rows_by_table(conn)
    for tenant in ("t0", "t1"):
        set_cap(conn, tenant, "bench_noop", 1000)
    enqueue_many(conn, [*jobs(30, "t0"), *jobs(30, "t1"), *jobs(30, None)])
    conn.commit()
    assert drain(conn, app="benchmarks.bench_app").ok
    written = {t for t, n in rows_by_table(conn).items() if n != before[t]}
    assert {"pipeline.job_history", "pipeline.tenant_passes", "pipeline.freed_slots"} <= written

    reset(conn)

    after = rows_by_table(conn)
    assert {t: after[t] for t in written} == {t: before[t] for t in written}
