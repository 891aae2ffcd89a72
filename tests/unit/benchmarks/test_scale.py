"""The scale benchmark's plan of days, its cutoff for the prune, and its report."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest

from benchmarks.scale import (
    LOAD_FILE,
    Day,
    as_loaded,
    execution_ms,
    markdown_table,
    median_by_figure,
    parser,
    plan_days,
    prune_command,
    prune_older_than_days,
    ratio,
    statements_said,
)


def test_plan_days_places_every_job_once_in_consecutive_ids_oldest_day_first() -> None:
    plan = plan_days(1003, 4)
    assert sum(day.count for day in plan) == 1003
    assert [day.ago for day in plan] == [5, 4, 3, 2]
    assert plan[0].first == 1
    for earlier, later in itertools.pairwise(plan):
        assert later.first == earlier.last + 1
    assert plan[-1].last == 1003


def test_plan_days_spreads_the_remainder_one_job_each_over_the_oldest_days() -> None:
    assert [day.count for day in plan_days(1003, 4)] == [251, 251, 251, 250]


def test_plan_days_leaves_out_days_without_jobs_and_starts_where_asked() -> None:
    assert plan_days(2, 5, first_ago=3, first_id=100) == [
        Day(ago=7, first=100, count=1),
        Day(ago=6, first=101, count=1),
    ]


def test_plan_days_refuses_no_days() -> None:
    with pytest.raises(ValueError):
        plan_days(10, 0)


@pytest.mark.parametrize(("days", "drop"), [(30, 3), (30, 1), (10, 10), (2, 1)])
def test_the_prune_cutoff_leaves_exactly_the_oldest_days_wholly_past_it(
    days: int, drop: int
) -> None:
    older_than = prune_older_than_days(days, 2, drop)
    # A day `ago` days back ends at the midnight after it, today - ago + 1 (in days from
    # today's midnight); the cutoff is now - older_than, now anywhere within today.
    plan = plan_days(days, days)
    for now in (0.01, 0.5, 0.99):
        wholly_past = [day.ago for day in plan if 1 - day.ago <= now - older_than]
        assert wholly_past == [day.ago for day in plan[:drop]]


def test_the_prune_cutoff_never_reaches_the_last_24_hours() -> None:
    with pytest.raises(ValueError):
        prune_older_than_days(3, 2, 4)
    with pytest.raises(ValueError):
        prune_older_than_days(3, 2, 0)


def test_a_reused_server_prunes_by_the_days_it_was_loaded_with_not_the_default(
    tmp_path: Path,
) -> None:
    record = {"load": {}, "finished": 99_000_000, "days": 99, "volume": 1_000_000}
    (tmp_path / LOAD_FILE).write_text(json.dumps(record))
    args = parser().parse_args(["--reuse", str(tmp_path), "--prune-days", "1"])
    assert as_loaded(args) == record
    assert (args.finished, args.days, args.day_volume) == (99_000_000, 99, 1_000_000)
    # The oldest of 99 days alone: the default 30 days gave 30d, which dropped 70 of them.
    assert prune_older_than_days(args.days, 2, args.prune_days) == 99


def test_a_fresh_load_keeps_the_days_it_was_asked_for() -> None:
    args = parser().parse_args(["--days", "12"])
    assert as_loaded(args) is None
    assert args.days == 12


def test_the_prune_takes_its_own_rest_unless_one_is_asked_for() -> None:
    args = parser().parse_args([])
    assert args.prune_rest is None
    assert "--rest" not in prune_command(Path("pipeline"), "99d", args.prune_rest)
    for given, passed in (("0", "0"), ("2", "2"), ("0.5", "0.5")):
        rest = parser().parse_args(["--prune-rest", given]).prune_rest
        assert prune_command(Path("pipeline"), "99d", rest)[-2:] == ["--rest", passed]


@pytest.mark.parametrize("given", ["-1", "nan", "101", "soon"])
def test_the_prune_rest_is_refused_where_the_prune_would_refuse_it(given: str) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["--prune-rest", given])


def test_execution_ms_reads_the_explain_analyze_footer() -> None:
    plan = [
        "Seq Scan on x  (cost=0.00..1.00 rows=1)",
        "Planning Time: 0.2 ms",
        "Execution Time: 163.412 ms",
    ]
    assert execution_ms(plan) == pytest.approx(163.412)
    with pytest.raises(ValueError):
        execution_ms(plan[:2])


def test_ratio_is_full_over_empty_and_nan_without_an_empty_figure() -> None:
    assert ratio(200.0, 150.0) == pytest.approx(0.75)
    assert math.isnan(ratio(0.0, 5.0))


def test_median_by_figure_takes_each_figure_over_the_rounds_that_have_it() -> None:
    rounds = [{"drain": 10.0, "wake": 1.0}, {"drain": 30.0}, {"drain": 20.0, "wake": 3.0}]
    assert median_by_figure(rounds) == {"drain": 20.0, "wake": 2.0}


def test_markdown_table_has_a_row_per_figure_with_its_ratio() -> None:
    table = markdown_table([("drain (jobs/s)", 13981.4, 13938.0), ("wake p99 (ms)", 10.0, 11.5)])
    lines = table.splitlines()
    assert lines[0] == "| figure | empty | with history | ratio |"
    assert lines[2] == "| drain (jobs/s) | 13,981 | 13,938 | 1.00 |"
    assert lines[3] == "| wake p99 (ms) | 10.00 | 11.50 | 1.15 |"
    assert len(lines) == 4


def test_statements_said_ranks_full_by_time_then_by_reads_beside_empty() -> None:
    # calls, ms, rows, blocks hit, blocks read, read ms
    empty = {"claim": [10.0, 5.0, 10.0, 100.0, 0.0, 0.0]}
    full = {
        "claim": [10.0, 6.0, 10.0, 100.0, 0.0, 0.0],
        "fold": [2.0, 900.0, 0.0, 1000.0, 50.0, 3.0],
        "insert": [4.0, 1.0, 4.0, 8.0, 400.0, 20.0],
    }
    said = statements_said(empty, full, 2, 1000).splitlines()
    by_time, by_read = said[1:3], said[4:6]
    assert [line.split("`")[1] for line in by_time] == ["fold", "claim"]
    assert [line.split("`")[1] for line in by_read] == ["insert", "fold"]
    # A statement full ran and empty did not reads as nothing in empty, per call in full.
    assert "empty 0 calls 0 ms" in by_time[0]
    assert "full 2 calls 900 ms (900.00 us/job) hit 500.0 read 25.00 (3 ms)" in by_time[0]


def test_a_control_run_takes_its_length_and_the_runs_file_to_pair_it_in() -> None:
    args = parser().parse_args(["--control-s", "560", "--runs-file", "runs.jsonl"])
    assert args.control_s == 560.0
    assert args.runs_file == Path("runs.jsonl")
    assert parser().parse_args([]).control_s == 0.0
