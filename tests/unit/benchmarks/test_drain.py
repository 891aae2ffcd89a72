"""The drain benchmark's percentile, which the scale benchmark reuses."""

from __future__ import annotations

from benchmarks.drain import percentile


def test_percentile_takes_the_value_at_its_rank_in_sorted_order() -> None:
    values = [float(v) for v in range(100, 0, -1)]
    assert percentile(values, 0.5) == 51.0
    assert percentile(values, 0.99) == 100.0


def test_percentile_of_one_value_is_that_value_whatever_the_rank() -> None:
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([7.0], 0.0) == 7.0
