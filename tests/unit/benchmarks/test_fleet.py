"""The fleet benchmark's reading of pg_stat_activity and its collapse check: no database."""

from __future__ import annotations

from collections import Counter

from benchmarks.compare.cpu import Usage
from benchmarks.compare.measure import Drain
from benchmarks.fleet import (
    MAX_MISSED,
    Activity,
    Config,
    FleetDrain,
    collapses,
    on_time,
    split,
    tally,
)

USAGE = Usage(1.0, 0.5, 0.5, 0.0, 0.0, 0.0)


def test_tally_counts_worker_connections_by_role_and_ignores_others() -> None:
    rows: list[tuple[str, str, str | None, str | None]] = [
        ("pg-pipeline worker", "idle", "Client", "ClientRead"),
        ("pg-pipeline worker", "idle", "Client", "ClientRead"),
        ("pg-pipeline listener", "idle", "Client", "ClientRead"),
        ("psql", "active", None, None),
        ("", "idle", "Client", "ClientRead"),
    ]
    roles = tally(rows, Activity())
    assert roles == Counter({"pool": 2, "listener": 1})


def test_tally_records_active_worker_backends_wait_events_and_cpu() -> None:
    activity = Activity()
    rows: list[tuple[str, str, str | None, str | None]] = [
        ("pg-pipeline worker", "active", "LWLock", "WALWrite"),
        ("pg-pipeline worker", "active", None, None),
        ("pg-pipeline worker", "active", "LWLock", "WALWrite"),
        ("pg-pipeline worker", "idle", "Client", "ClientRead"),
        ("psql", "active", "Lock", "tuple"),
    ]
    tally(rows, activity)
    assert activity.active_samples == 3
    assert activity.most_active == 3
    assert activity.waits == Counter({"LWLock:WALWrite": 2, "CPU": 1})
    assert activity.top_waits(1) == "LWLock:WALWrite 67 %"


def test_most_active_is_the_largest_sample_not_the_sum() -> None:
    activity = Activity()
    busy: list[tuple[str, str, str | None, str | None]] = [
        ("pg-pipeline worker", "active", None, None)
    ]
    tally(busy * 2, activity)
    tally(busy * 5, activity)
    tally(busy, activity)
    assert activity.most_active == 5
    assert activity.active_samples == 8


def test_a_bigger_config_whose_best_run_is_below_a_smaller_ones_worst_collapses() -> None:
    small, big = Config(2, 8), Config(16, 8)
    assert collapses({small: [4000, 4200], big: [3000, 3900]}) == [(big, small)]


def test_overlapping_runs_are_noise_not_collapse() -> None:
    small, big = Config(2, 8), Config(16, 8)
    assert collapses({small: [4000, 4200], big: [3500, 4100]}) == []


def test_configs_that_neither_contain_the_other_are_not_compared() -> None:
    # More processes but fewer threads each: neither is "more" than the other.
    many_thin, few_wide = Config(16, 8), Config(2, 32)
    assert collapses({many_thin: [1000], few_wide: [5000]}) == []


def test_more_threads_in_as_many_processes_counts_as_more() -> None:
    narrow, wide = Config(4, 8), Config(4, 32)
    assert collapses({narrow: [5000], wide: [4000]}) == [(wide, narrow)]


def test_split_shows_pool_and_listener_and_what_else_was_there() -> None:
    assert split(Counter({"pool": 5, "listener": 1})) == "6 (5 + 1)"
    assert split(Counter({"pool": 5, "listener": 1, "probe": 1})) == "7 (5 + 1 + 1 other)"


def test_drains_whose_first_cpu_reading_came_late_are_left_out_of_cpu_figures() -> None:
    prompt = FleetDrain(Drain(5000, 0.06, 0.08, USAGE, cpu_missed=0.02), Activity())
    late = FleetDrain(Drain(6500, 0.03, 0.02, USAGE, cpu_missed=MAX_MISSED + 0.3), Activity())
    assert on_time([prompt, late]) == [prompt.drain]
