"""Which days of the history a run-by-run prune pass's batches leave out (retention.reach): only
closed days that can hold no job of a run the pass can take, the longest stretch of them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pg_pipeline.maintenance.retention import HistoryDay, Reach, reach

MIDNIGHT = datetime(2026, 12, 4, tzinfo=UTC)


def day(
    ago: int, least_id: int | None, least_root: int | None = None, greatest_id: int | None = None
) -> HistoryDay:
    """The day `ago` days before MIDNIGHT's; its greatest id the least one unless given."""
    lower = MIDNIGHT - timedelta(days=ago)
    return HistoryDay(
        lower, lower + timedelta(days=1), least_id, least_root, greatest_id or least_id
    )


#: The cutoff in the day 10 days back, and every day closed that ended a day before now.
CUTOFF = MIDNIGHT - timedelta(days=10) + timedelta(hours=6)
OPEN_FROM = MIDNIGHT - timedelta(hours=12)


def test_the_pass_takes_runs_up_to_the_greatest_id_its_walk_can_meet() -> None:
    # In the days that begin before the cutoff and among the kept rows.
    days = [day(11, 1, greatest_id=100), day(10, 101, greatest_id=200), day(9, 201)]

    assert reach(days, CUTOFF, OPEN_FROM, None).runs_upto == 200
    assert reach(days, CUTOFF, OPEN_FROM, 250).runs_upto == 250


def test_a_day_is_left_out_when_its_least_id_and_least_root_are_both_above_the_runs() -> None:
    days = [
        day(10, 101, greatest_id=200),
        day(9, 150, greatest_id=300),  # a job created in the day of the cutoff: read
        day(8, 301, least_root=120),  # a job of a run of that day: read
        day(7, 401, least_root=401),
        day(6, None),  # empty
        day(5, 501),
        day(4, 601, least_root=201),  # above the runs, by one
    ]

    assert reach(days, CUTOFF, OPEN_FROM, None) == Reach(200, days[3].lower, days[6].upper)


def test_a_day_still_open_to_late_rows_is_read_whatever_its_ids() -> None:
    days = [day(10, 101, greatest_id=200), day(2, 301), day(1, 401), day(0, 501), day(-1, None)]

    # Yesterday ended 12 hours ago, after OPEN_FROM: a transaction begun before it ended may
    # still write into it.
    assert reach(days, CUTOFF, OPEN_FROM, None) == Reach(200, days[1].lower, days[1].upper)


def test_the_longest_stretch_of_days_one_after_another_is_left_out() -> None:
    days = [
        day(10, 101, greatest_id=200),
        day(9, 201),
        day(8, 301),
        day(7, 401, least_root=150),  # read: the stretch breaks
        day(6, 501),
        day(5, 601),
        day(4, 701),
        # no day 3 (a day made later would fall in a range spanning it)
        day(2, 801),
    ]

    assert reach(days, CUTOFF, OPEN_FROM, None) == Reach(200, days[4].lower, days[6].upper)


def test_nothing_is_left_out_when_no_day_can_be() -> None:
    days = [day(10, 101, greatest_id=200), day(9, 150), day(0, 501)]

    found = reach(days, CUTOFF, OPEN_FROM, None)

    assert (found.skip_from, found.skip_to) == (CUTOFF, CUTOFF)
    assert reach([], CUTOFF, OPEN_FROM, None) == Reach(0, CUTOFF, CUTOFF)
