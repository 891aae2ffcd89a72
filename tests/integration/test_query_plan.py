"""The claim must stay an index lookup however many finished rows pile up."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from pipeline.queries import Q

CLAIM_PARAMS = {
    "types": ["noop"],
    "limit": 10,
    "worker_id": uuid.UUID(int=1),
    "cap_stages": ["noop"],
    "caps": [2],
}


def nested_plans(conn: psycopg.Connection[Any], query: Any, params: dict[str, Any]) -> str:
    """The plans of every statement `query` runs, the claim function's own included: the
    claim is PL/pgSQL, whose inner statements a plain EXPLAIN does not show."""
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    for setting in (
        "auto_explain.log_min_duration = 0",
        "auto_explain.log_nested_statements = on",
        "auto_explain.log_level = notice",
    ):
        conn.execute(f"SET {setting}")  # type: ignore[arg-type]
    with conn.transaction(force_rollback=True):
        conn.execute(query, params).fetchall()
    conn.execute("RESET auto_explain.log_min_duration")
    return "\n".join(notices)


def test_claim_uses_the_partial_index_with_a_million_finished_rows(
    conn: psycopg.Connection[Any],
) -> None:
    conn.execute(
        """
        INSERT INTO jobs (type, payload, status, attempts, finished_at)
        SELECT 'noop', '{}'::jsonb, (ARRAY['done', 'failed', 'cancelled'])[1 + g % 3], 1, now()
        FROM generate_series(1, 1000000) AS g
        """
    )
    conn.execute("INSERT INTO jobs (type, payload) SELECT 'noop', '{}' FROM generate_series(1, 50)")
    conn.execute("ANALYZE jobs")
    plan = nested_plans(conn, Q["claim"], CLAIM_PARAMS)
    assert "jobs_ready" in plan, plan
    assert "Seq Scan on jobs" not in plan, plan

    reclaim_plan = "\n".join(
        row[0]
        for row in conn.execute(
            "EXPLAIN " + Q["reclaim_expired"], {"limit": 100, "free_crashes": 3}
        )
    )
    assert "jobs_running" in reclaim_plan, reclaim_plan

    # A run's progress (what `submit --wait` polls) reads the root and its descendants only.
    root = conn.execute("SELECT min(id) FROM jobs").fetchone()
    progress_plan = "\n".join(
        row[0]
        for row in conn.execute("EXPLAIN " + Q["run_progress"], {"root_id": root[0] if root else 0})
    )
    assert "jobs_run" in progress_plan, progress_plan
    assert "Seq Scan" not in progress_plan, progress_plan
