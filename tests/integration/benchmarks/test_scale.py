"""The scale benchmark's load leaves the server as a day of finishing jobs would have."""

from __future__ import annotations

import psycopg

from benchmarks.scale import load_history


def test_the_load_folds_its_days_rollup_shards_as_the_hourly_service_would(db_url: str) -> None:
    load = load_history(db_url, 200, 2, 3000, indexes_after=False)

    assert load.rows == 3200
    with psycopg.connect(db_url) as conn:
        [(unfolded, jobs)] = conn.execute(
            "SELECT count(*) FILTER (WHERE shard <> 0 "
            "AND minute < date_trunc('minute', now()) - interval '1 hour'), sum(jobs) "
            "FROM pipeline.finished_by_minute"
        ).fetchall()
    # Older than an hour, one row a minute, stage and outcome, and no job counted out by it.
    assert unfolded == 0
    assert jobs == 3000
