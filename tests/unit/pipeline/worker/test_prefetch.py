from __future__ import annotations

from pg_pipeline.worker.prefetch import FAST_RUN_S, FORGET_AFTER_S, Prefetch


def test_nothing_is_claimed_ahead_before_any_job_has_shown_how_long_it_takes() -> None:
    assert Prefetch(8, None, 100).extra(now=0.0) == 0


def test_fast_stages_get_about_ten_milliseconds_of_work_per_runner() -> None:
    ahead = Prefetch(4, None, 100)
    for i in range(5):
        ahead.observe("a", 0.001, now=float(i))
        ahead.observe("b", 0.002, now=float(i))
    # The slower stage sets the pace: 5 jobs of 2 ms per runner, 4 runners.
    assert ahead.extra(now=5.0) == 20


def test_claiming_ahead_stays_within_the_claim_batch_and_at_least_a_job_per_runner() -> None:
    tiny = Prefetch(8, None, 100)
    tiny.observe("noop", 0.00001, now=0.0)
    assert tiny.extra(now=0.0) == 100
    edge = Prefetch(8, None, 100)
    edge.observe("ten_ms", FAST_RUN_S, now=0.0)
    assert edge.extra(now=0.0) == 8


def test_one_slow_stage_stops_claiming_ahead_until_it_is_forgotten() -> None:
    ahead = Prefetch(8, None, 100)
    ahead.observe("fast", 0.005, now=0.0)
    ahead.observe("slow", 2.0, now=0.0)
    assert ahead.extra(now=1.0) == 0
    ahead.observe("fast", 0.005, now=FORGET_AFTER_S - 1)
    assert ahead.extra(now=FORGET_AFTER_S + 1) == 16


def test_claiming_ahead_stops_once_each_runner_met_a_stage_that_turned_slow() -> None:
    ahead = Prefetch(4, None, 100)
    for i in range(10):
        ahead.observe("s", FAST_RUN_S / 2, now=float(i))
    assert ahead.extra(now=10.0) == 8
    for i in range(5):
        ahead.observe("s", 1.0, now=10.0 + i)
    assert ahead.extra(now=15.0) == 0


def test_a_stall_that_stretched_one_run_per_runner_leaves_claiming_ahead_as_it_was() -> None:
    """The wall clock times a run: a stall of the whole process (the GIL, a machine with more
    runnable threads than cores) stretches every run in flight at once, one per runner."""
    ahead = Prefetch(8, None, 400)
    for i in range(50):
        ahead.observe("noop", 0.000005, now=float(i))
    assert ahead.extra(now=50.0) == 400
    for _runner in range(8):
        ahead.observe("noop", 0.060, now=50.0)
        ahead.observe("noop", 0.000005, now=50.0)
    assert ahead.extra(now=50.0) == 400


def test_a_fixed_number_wins_over_what_was_observed() -> None:
    never = Prefetch(8, 0, 100)
    never.observe("fast", 0.0001, now=0.0)
    assert never.extra(now=0.0) == 0
    always = Prefetch(8, 3, 100)
    always.observe("slow", 9.0, now=0.0)
    assert always.extra(now=0.0) == 3
