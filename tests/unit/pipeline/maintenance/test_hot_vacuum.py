"""The hot table's vacuum decided from its counts alone: no database."""

from __future__ import annotations

from pg_pipeline.maintenance.hot_vacuum import (
    HOT_VACUUM_DEAD_ROWS,
    HOT_VACUUM_PER_LIVE,
    HotTable,
    due,
    removed_little,
    threshold,
)
from pg_pipeline.settings import WorkerSettings


def test_a_small_table_is_vacuumed_once_its_dead_rows_pass_the_floor() -> None:
    assert not due(HotTable(dead=100_000, live=20_000, vacuuming=False), 100_000)
    assert due(HotTable(dead=100_001, live=20_000, vacuuming=False), 100_000)


def test_a_large_backlog_is_vacuumed_once_its_dead_rows_outnumber_its_live_ones() -> None:
    live = 1_000_000
    assert threshold(live, 100_000, per_live=1.0) == live
    assert not due(HotTable(dead=500_000, live=live, vacuuming=False), 100_000, per_live=1.0)
    assert due(HotTable(dead=live + 1, live=live, vacuuming=False), 100_000, per_live=1.0)


def test_nothing_is_due_while_a_vacuum_of_the_table_runs() -> None:
    assert not due(HotTable(dead=5_000_000, live=20_000, vacuuming=True), 100_000)


def test_a_vacuum_that_left_most_of_its_dead_rows_was_kept_from_them() -> None:
    assert removed_little(found=300_000, left=290_000, limit=100_000)
    # What died while it ran is left too: a fast drain's second or two.
    assert not removed_little(found=300_000, left=60_000, limit=100_000)
    # Most of a few: under the threshold, the next round has nothing to do anyway.
    assert not removed_little(found=150_000, left=90_000, limit=100_000)


def test_the_settings_default_is_the_services() -> None:
    assert WorkerSettings().hot_vacuum_dead_rows == HOT_VACUUM_DEAD_ROWS
    assert threshold(0, HOT_VACUUM_DEAD_ROWS) == HOT_VACUUM_DEAD_ROWS
    assert HOT_VACUUM_PER_LIVE > 0
