"""The claim must stay an index lookup however many finished rows pile up."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from pipeline.queries import Q


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
    params = {"types": ["noop"], "limit": 10, "worker_id": uuid.UUID(int=1)}
    plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + Q["claim"], params).fetchall())
    assert "jobs_ready" in plan, plan
    assert "Seq Scan" not in plan, plan

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
