"""The scale benchmark's load leaves the server as a day of finishing jobs would have, and its
fed drains mark their windows."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import psycopg
import pytest

from benchmarks.drain_windows import CONTROL, PRUNE
from benchmarks.scale import fed_drain, load_history


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


def test_a_fed_drain_marks_every_second_and_edges_the_prunes_windows(
    db_url: str, tmp_path: Path
) -> None:
    # A stand-in for the prune: a process that runs two seconds.
    sleeper = [sys.executable, "-c", "import time; time.sleep(2)"]
    prune = fed_drain(db_url, 200, tmp_path / "home", sleeper, before_s=2.0)
    control = fed_drain(db_url, 200, tmp_path / "home", None, control_s=3.0)

    assert prune.kind == PRUNE and control.kind == CONTROL
    assert len(prune.edges) == 4
    assert prune.edges[1] - prune.edges[0] == pytest.approx(2.0, abs=1.0)
    assert prune.edges[2] - prune.edges[1] == pytest.approx(prune.prune_s, abs=0.5)
    # The window after lasts as long as the prune ran (5 s at least).
    assert prune.edges[3] - prune.edges[2] == pytest.approx(5.0, abs=1.0)
    for run in (prune, control):
        offsets = [p.offset for p in run.points]
        assert offsets[0] == 0.0 and offsets == sorted(offsets)
        assert max(b - a for a, b in itertools.pairwise(offsets)) < 2.0
        done = [p.done for p in run.points]
        assert done == sorted(done) and done[-1] > 0
    assert control.points[-1].offset == pytest.approx(3.0, abs=1.0)
    with psycopg.connect(db_url) as conn:
        [(left,)] = conn.execute("SELECT count(*) FROM pipeline.active_jobs").fetchall()
    assert left == 0
