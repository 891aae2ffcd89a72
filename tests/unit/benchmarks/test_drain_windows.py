"""A fed drain's windows: the prune run's, and a control's at the same offsets."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from benchmarks.compare.cpu import Reading
from benchmarks.drain_windows import (
    CONTROL,
    PRUNE,
    FedDrain,
    Point,
    append_run,
    compared,
    done_by_mark,
    pairs,
    pairs_said,
    rate_by_span,
    read_runs,
    window,
)


def reading(offset: float, other_busy: int = 0) -> Reading:
    """A CPU reading `offset` s in: 200 ticks a second over the machine (2 cores), of which
    `other_busy` ticks were someone else's since the start."""
    total = int(200 * offset)
    return Reading(offset, other_busy, total, 0, 0, 0, 1.0)


def drain(kind: str, rates: list[float], edges: list[float] | None = None) -> FedDrain:
    """Marks every second, `rates[i]` jobs finished in second i; no other load."""
    points, done = [Point(0.0, 0, reading(0.0))], 0.0
    for i, rate in enumerate(rates, 1):
        done += rate
        points.append(Point(float(i), int(done), reading(float(i))))
    return FedDrain(kind, "21:00:00", "1.0", points, edges or [], 3.0 if edges else 0.0)


def test_done_by_mark_counts_the_jobs_finished_before_each_mark() -> None:
    # Bucket 0: before mark 0; bucket 1: from mark 0 to mark 1; bucket 3: after the last.
    assert done_by_mark({0: 2, 1: 10, 2: 5, 3: 99}, 3) == [2, 12, 17]
    assert done_by_mark({}, 2) == [0, 0]


def test_a_window_is_the_rate_between_the_first_marks_at_or_after_its_edges() -> None:
    d = drain(CONTROL, [100.0] * 4 + [50.0] * 4)
    assert window(d.points, 0, 4).rate == pytest.approx(100.0)
    late = window(d.points, 3.5, 6.2)  # read from mark 4 to mark 7
    assert (late.start, late.end) == (4.0, 7.0)
    assert late.rate == pytest.approx(50.0)


def test_a_window_past_the_drains_end_has_no_rate() -> None:
    d = drain(CONTROL, [100.0] * 4)
    assert math.isnan(window(d.points, 2, 9).rate)


def test_a_window_reads_the_other_sessions_load_between_its_marks() -> None:
    points = [Point(0.0, 0, reading(0.0)), Point(10.0, 10, reading(10.0, other_busy=500))]
    # 500 ticks of someone else's over 2,000 of the machine's: a quarter of all cores.
    assert window(points, 0, 10).other_pct == pytest.approx(25.0)


def test_the_control_is_read_at_the_prune_runs_offsets() -> None:
    prune = drain(PRUNE, [100.0] * 2 + [60.0] * 3 + [100.0] * 3, edges=[0, 2, 5, 8])
    control = drain(CONTROL, [100.0] * 2 + [80.0] * 6)
    got = compared(prune, control)
    assert [name for name in got] == ["before", "beside", "after"]
    ours, theirs = got["beside"]
    assert ours.rate == pytest.approx(60.0)
    assert theirs.rate == pytest.approx(80.0)
    assert got["after"][1].rate == pytest.approx(80.0)


def test_pairs_take_the_runs_two_by_two_whichever_ran_first() -> None:
    p1, c1 = drain(PRUNE, [1.0], [0, 1, 1, 1]), drain(CONTROL, [1.0])
    c2, p2 = drain(CONTROL, [2.0]), drain(PRUNE, [2.0], [0, 1, 1, 1])
    assert pairs([p1, c1, c2, p2]) == [(p1, c1, PRUNE), (p2, c2, CONTROL)]


@pytest.mark.parametrize("kinds", [[PRUNE, PRUNE], [CONTROL, CONTROL], [PRUNE]])
def test_pairs_refuse_runs_not_alternated(kinds: list[str]) -> None:
    runs = [drain(kind, [1.0], [0, 1, 1, 1] if kind == PRUNE else None) for kind in kinds]
    with pytest.raises(ValueError):
        pairs(runs)


def test_runs_written_to_the_file_read_back_as_they_were(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    assert read_runs(path) == []
    runs = [drain(PRUNE, [5.0, 7.0], [0, 1, 2, 2]), drain(CONTROL, [5.0, 6.0])]
    for run in runs:
        append_run(path, run)
    assert read_runs(path) == runs


def test_the_pairs_report_says_beside_over_control_beside_for_each_pair() -> None:
    prune = drain(PRUNE, [100.0] * 2 + [60.0] * 3 + [100.0] * 3, edges=[0, 2, 5, 8])
    control = drain(CONTROL, [100.0] * 2 + [80.0] * 6)
    said = pairs_said([prune, control, control, prune])
    beside = [line for line in said.splitlines() if "| beside " in line]
    assert len(beside) == 2
    assert all("| 60 | 80 | 0.75 |" in line for line in beside)
    assert said.splitlines()[-1].startswith("beside ÷ control-beside over 2 pairs: 0.75-0.75")


def test_rate_by_span_shows_the_drain_drifting() -> None:
    spans = rate_by_span(drain(CONTROL, [100.0] * 3 + [40.0] * 3 + [10.0]), 3)
    assert [(start, rate) for start, rate, _, _ in spans] == [(0.0, 100.0), (3.0, 40.0)]


def test_rate_by_span_names_what_was_under_vacuum_in_each_span() -> None:
    d = drain(CONTROL, [100.0] * 6)
    d.points[4] = Point(4.0, 400, reading(4.0), ("pipeline.job_history_x (auto)",))
    spans = rate_by_span(d, 3)
    assert [v for *_, v in spans] == [(), ("pipeline.job_history_x (auto)",)]


def test_a_run_written_before_marks_named_vacuums_reads_back_with_none(tmp_path: Path) -> None:
    line = drain(CONTROL, [100.0] * 2).to_json().replace(', "vacuums": []', "")
    assert '"vacuums"' not in line
    (tmp_path / "runs").write_text(line + "\n")
    assert all(p.vacuums == () for p in read_runs(tmp_path / "runs")[0].points)
