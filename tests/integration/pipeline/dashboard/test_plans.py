"""The dashboard's queries stay index lookups on a million finished jobs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from pg_pipeline.queries import Q
from tests.support.history import (
    INDEX,
    big_seq_scans,
    make_past_days,
    pages_read,
    with_finished_span,
)

RUNS = {"tenant": None, "before": None, "status": None, "limit": 30}
JOBS_ANY = {
    "since_s": None,
    "status": None,
    "stage": None,
    "tenant": None,
    "since": None,
    "until": None,
    "search": None,
    "before": None,
    "after": None,
    "limit": 51,
    "window": 10_000,
}


@pytest.fixture(autouse=True)
def history_days(db_url: str) -> None:
    """The history's days that this module's finished jobs are dated in."""
    with psycopg.connect(db_url, autocommit=True) as c:
        make_past_days(c, 13)


#: The most pages (8 KiB each) any page's statement may touch on the million-job history.
MAX_PAGES = 4000


def explain(conn: psycopg.Connection[Any], name: str, params: dict[str, Any]) -> str:
    rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) " + Q[name], params).fetchall()  # type: ignore[operator]
    return "\n".join(str(r[0]) for r in rows)


def test_dashboard_queries_use_indexes_on_a_million_finished_jobs(
    conn: psycopg.Connection[Any],
) -> None:
    # A second apart, the newest now: 200 tenants, three stages, one job in a thousand failed.
    conn.execute(
        """
        INSERT INTO pipeline.job_history (type, tenant_id, payload, status, attempts, created_at,
            finished_at,
                          last_error)
        SELECT (ARRAY['ocr', 'ocr', 'ocr', 'extract', 'upload'])[1 + g % 5], 't' || (g % 200),
               '{}', CASE WHEN g % 1000 = 0 THEN 'failed' ELSE 'done' END, 1,
               now() - (1000000 - g) * interval '1 second',
               now() - (1000000 - g) * interval '1 second',
               CASE WHEN g % 1000 = 0 THEN 'error ' || g END
        FROM generate_series(1, 1000000) AS g
        """
    )
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id) SELECT 'ocr', 't1' FROM "
        "generate_series(1, 9)"
    )
    # What autovacuum does on a live table: statistics, and the BRIN summary of created_at.
    conn.execute(
        "VACUUM ANALYZE pipeline.active_jobs, pipeline.job_history, pipeline.finished_by_minute, "
        "pipeline.tenant_finished_by_minute"
    )
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("jobs_list", JOBS_ANY, "jobs_pkey"),
        ("jobs_list", JOBS_ANY | {"tenant": "t7"}, "jobs_tenant"),
        ("jobs_list", JOBS_ANY | {"status": "failed"}, "jobs_failed"),
        ("jobs_list", JOBS_ANY | {"status": "failed", "search": "%error 5%"}, "jobs_failed"),
        ("jobs_list", JOBS_ANY | {"since": hour_ago}, "jobs_"),
        ("jobs_list", JOBS_ANY | {"before": 500_000}, "jobs_pkey"),
        # Each day of the history is walked back by its id index, and the newest days' rows
        # fill the page: a status that most jobs have reads a page's worth; a stage, its
        # (type, id) index.
        ("jobs_list", JOBS_ANY | {"status": "done"}, "_id"),
        ("jobs_list", JOBS_ANY | {"stage": "extract"}, "_stage"),
        # No job was cancelled: no day of the history is read (finished_span), the kept rows
        # alone.
        ("jobs_list", JOBS_ANY | {"status": "cancelled"}, "on job_history_kept"),
        # Queued alone implies neither ready index's predicate: the query ORs the two.
        ("jobs_list", JOBS_ANY | {"status": "queued"}, "jobs_ready"),
        ("jobs_list", JOBS_ANY | {"after": 500_000}, "jobs_pkey"),
        ("jobs_list", JOBS_ANY | {"after": 500_000, "tenant": "t7"}, "jobs_tenant"),
        # The text search reads a window of failed jobs, not the table: a match or none.
        ("jobs_search", JOBS_ANY | {"search": "%error 5%"}, "jobs_failed"),
        ("jobs_search", JOBS_ANY | {"search": "%no such text%"}, "jobs_failed"),
        ("jobs_search", JOBS_ANY | {"search": "%no such text%", "after": 500_000}, "jobs_failed"),
        ("runs_list", RUNS, "runs_pkey"),
        ("tenants_queued", {"tenant": None, "limit": 50}, "jobs_ready"),
        ("tenants_noisiest", {"tenant": None, "limit": 50}, "jobs_created"),
        # The overview's chart counts finished jobs from their minutes' rollups.
        ("monitoring_throughput", {"tenant": None}, "finished_by_minute_pkey"),
        ("monitoring_throughput", {"tenant": "t7"}, "tenant_finished_by_minute_pkey"),
        ("monitoring_tenant_stages", {"tenant": "t1"}, "jobs_ready"),
        # The jobs filter's stage list: a skip scan of the ready indexes, never the history.
        ("stage_names", {"tenant": None, "limit": 500}, "jobs_ready"),
        ("stage_names", {"tenant": "t1", "limit": 500}, "jobs_ready"),
    ]
    for name, params, index in cases:
        if name.startswith("jobs_list"):
            params = with_finished_span(conn, params)
        plan = explain(conn, name, params)
        assert not big_seq_scans(plan), (name, params, plan)
        # The hot table holds nine queued jobs: read whole or through jobs_ready, it costs the
        # backlog alone. The history must be read by index.
        if index != "jobs_ready":
            assert INDEX.get(index, index) in plan, (name, params, plan)
        # Pages, not milliseconds, so that a loaded CI cannot fail it: today's pages touch at
        # most about a thousand; a scan of the million-row history touches many times more.
        assert pages_read(plan) < MAX_PAGES, (name, params, plan)
