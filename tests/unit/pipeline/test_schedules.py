"""Schedules without a database: definitions, fire-time arithmetic, and the CLI's argument types."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import BaseModel

from pg_pipeline import (
    Context,
    InvalidPayload,
    InvalidSchedule,
    Registry,
    ScheduleRegistry,
    schedule,
)
from pg_pipeline.commands.api import instant_arg
from pg_pipeline.commands.enqueue import not_before
from pg_pipeline.commands.schedule import catch_up_arg, cron_arg, every_arg, timezone_arg
from pg_pipeline.schedules import CATCH_UP_MAX, Schedule, Timing, fire_key
from pg_pipeline.stage import stage


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


class Report(BaseModel):
    day: str


# -- definitions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "either cron= or every="),
        ({"cron": "* * * * *", "every": 5}, "either cron= or every="),
        ({"cron": "61 * * * *"}, "invalid cron expression '61 * * * *': Bad minute"),
        ({"cron": "0 2 * *"}, "Wrong number of fields"),
        ({"cron": "   "}, "the cron expression is empty"),
        ({"every": 0}, "more than 0 seconds"),
        ({"every": -5}, "more than 0 seconds"),
        ({"every": float("nan")}, "more than 0 seconds"),
        ({"every": 1e-9}, "within 0.001.."),
        ({"every": True}, "a number of seconds"),
        ({"cron": "0 2 * * *", "timezone": "Mars/Olympus"}, "unknown timezone 'Mars/Olympus'"),
        ({"cron": "0 2 * * *", "timezone": "../../etc/passwd"}, "unknown timezone"),
        ({"every": 60, "timezone": "Europe/Berlin"}, "cron schedules only"),
    ],
)
def test_a_bad_timing_is_refused_with_the_reason(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSchedule, match=message.replace("*", r"\*").replace("(", r"\(")):
        Timing.of(**kwargs)  # type: ignore[arg-type]


def test_cron_shorthands_six_fields_and_extra_spaces_are_read() -> None:
    assert Timing.of(cron="@daily").first_after(utc(2026, 5, 1, 10)) == utc(2026, 5, 2)
    assert Timing.of(cron="*/20 * * * * *").first_after(utc(2026, 5, 1, 10)) == utc(
        2026, 5, 1, 10, 0, 20
    )
    assert Timing.of(cron="  0   3 * * * ").cron == "0 3 * * *"


def test_schedule_checks_everything_but_an_unregistered_stage_at_declaration() -> None:
    stages = Registry()
    registry = ScheduleRegistry()

    @stage("report", registry=stages)
    def report(job: Report, ctx: Context) -> None: ...

    with pytest.raises(InvalidPayload, match="day"):
        schedule("bad", stage="report", cron="@daily", payload={}, registry=registry, stages=stages)
    with pytest.raises(InvalidSchedule, match="catch_up must be within"):
        schedule("x", stage="report", every=5, catch_up=0, registry=registry, stages=stages)
    with pytest.raises(InvalidSchedule, match="NUL"):
        schedule("x", stage="report", every=5, payload={"day": "\x00"}, registry=registry)
    # A stage not imported yet is checked when the worker syncs, not refused here.
    later = schedule("later", stage="not-yet", every=5, registry=registry, stages=stages)
    assert later.stage == "not-yet" and "later" in registry
    assert "bad" not in registry


def test_declaring_one_name_twice_differently_is_an_error_and_identically_is_not() -> None:
    registry = ScheduleRegistry()
    first = schedule("nightly", stage="s", cron="0 2 * * *", registry=registry)
    assert schedule("nightly", stage="s", cron="0 2 * * *", registry=registry) == first
    with pytest.raises(ValueError, match="declared twice"):
        schedule("nightly", stage="s", cron="0 3 * * *", registry=registry)
    assert [s.name for s in registry] == ["nightly"]


def test_a_pydantic_payload_is_stored_as_json_and_a_tenant_as_text() -> None:
    class P(BaseModel):
        when: datetime

    item = Schedule.define(
        "p", stage="s", every=timedelta(minutes=1), payload=P(when=utc(2026, 1, 1)), tenant_id=7
    )
    assert item.payload == {"when": "2026-01-01T00:00:00Z"}
    assert item.tenant_id == "7" and item.timing.every_s == 60.0


def test_fire_keys_never_collide_whatever_the_name_holds() -> None:
    a = fire_key("a@2026", utc(2026, 1, 1))
    b = fire_key("a", utc(2026, 1, 1))
    assert a != b
    assert fire_key("n", datetime(2026, 1, 1, 1, tzinfo=UTC)) == fire_key(
        "n", datetime.fromisoformat("2026-01-01T02:00:00+01:00")
    )


# -- fire times ---------------------------------------------------------------------------------


def test_every_keeps_its_phase_and_replays_only_the_latest_missed_times() -> None:
    timing = Timing.of(every=60)
    start = utc(2026, 5, 1, 10, 0, 0)
    assert timing.due(start, start - timedelta(seconds=1), 1) == ([], start)
    assert timing.due(start, start, 1) == ([start], start + timedelta(seconds=60))
    # Down for a month at one fire a minute: the arithmetic does not walk 43,000 fire times.
    month_later = start + timedelta(days=30, seconds=30)
    times, following = timing.due(start, month_later, 3)
    last = start + timedelta(days=30)
    assert times == [last - timedelta(seconds=120), last - timedelta(seconds=60), last]
    assert following == last + timedelta(seconds=60)


def test_cron_replays_the_latest_missed_times_oldest_first_and_never_before_next_fire_at() -> None:
    timing = Timing.of(cron="0 * * * *")
    since = utc(2026, 5, 1, 10)
    times, following = timing.due(since, utc(2026, 5, 1, 15, 30), 2)
    assert times == [utc(2026, 5, 1, 14), utc(2026, 5, 1, 15)]
    assert following == utc(2026, 5, 1, 16)
    times, _ = timing.due(since, utc(2026, 5, 1, 12), 50)
    assert times == [utc(2026, 5, 1, 10), utc(2026, 5, 1, 11), utc(2026, 5, 1, 12)]


def test_a_cron_every_second_missed_for_a_year_costs_only_its_catch_up() -> None:
    timing = Timing.of(cron="* * * * * *")
    since = utc(2025, 5, 1)
    times, following = timing.due(since, utc(2026, 5, 1, 0, 0, 0, 500_000), CATCH_UP_MAX)
    assert len(times) == CATCH_UP_MAX and times[-1] == utc(2026, 5, 1)
    assert following == utc(2026, 5, 1, 0, 0, 1)


@pytest.mark.parametrize(
    ("timing", "message"),
    [
        (Timing(cron="0 2 * * *", timezone="Mars/Olympus"), "unknown timezone 'Mars/Olympus'"),
        (Timing(cron="61 * * * *"), "invalid cron expression '61 * * * *': Bad minute"),
    ],
)
def test_a_stored_timing_this_system_cannot_read_raises_invalid_schedule(
    timing: Timing, message: str
) -> None:
    # A row written by a worker with newer tzdata or cronsim: read here, it is refused as a
    # definition would be, not with zoneinfo's or cronsim's own error.
    for call in (
        lambda: timing.due(utc(2026, 5, 1), utc(2026, 5, 2), 1),
        lambda: timing.first_after(utc(2026, 5, 1)),
    ):
        with pytest.raises(InvalidSchedule, match=re.escape(message)):
            call()


def test_cron_in_berlin_follows_daylight_saving_time() -> None:
    nightly = Timing.of(cron="30 2 * * *", timezone="Europe/Berlin")
    # 29 March 2026: 02:00 CET jumps to 03:00 CEST, so 02:30 does not exist and runs at the
    # jump, like Debian cron; 25 October: 02:30 happens twice and runs once.
    moment, fires = utc(2026, 3, 27, 12), []
    for _ in range(3):
        moment = nightly.first_after(moment)
        fires.append(moment)
    assert fires == [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)]
    moment, fires = utc(2026, 10, 23, 12), []
    for _ in range(3):
        moment = nightly.first_after(moment)
        fires.append(moment)
    assert fires == [utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]
    # Backwards (missed times) agrees with forwards across both transitions.
    times, _ = nightly.due(utc(2026, 3, 28, 1, 30), utc(2026, 3, 30, 12), 10)
    assert times == [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)]
    times, _ = nightly.due(utc(2026, 10, 24, 0, 30), utc(2026, 10, 26, 12), 10)
    assert times == [utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]


# -- the CLI's argument types -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (cron_arg, "0 25 * * *", "Bad hour"),
        (every_arg, "0", "more than 0 seconds"),
        (every_arg, "soon", "is not a number of seconds"),
        (every_arg, "inf", "more than 0 seconds"),
        (timezone_arg, "Europe/Atlantis", "unknown timezone"),
        (catch_up_arg, "0", "within 1..1000"),
        (catch_up_arg, "lots", "within 1..1000"),
        (instant_arg, "2026-12-01T09:30:00", "has no UTC offset"),
        (instant_arg, "2026-12-01", "has no UTC offset"),
        (instant_arg, "tomorrow", "is not an ISO 8601 time"),
        (instant_arg, "9999-12-31T23:00:00-10:00", "more than 100 years"),
    ],
)
def test_bad_schedule_arguments_are_one_line_usage_errors(
    parse: object, text: str, message: str
) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message) as caught:
        parse(text)  # type: ignore[operator]
    assert "\n" not in str(caught.value)


def test_at_takes_any_offset_and_a_past_time_means_now() -> None:
    assert instant_arg("2026-12-01T09:30:00Z") == utc(2026, 12, 1, 9, 30)
    assert instant_arg("2026-12-01T10:30:00+01:00") == utc(2026, 12, 1, 9, 30)
    assert every_arg("0.5") == 0.5
    assert not_before(datetime.now(UTC) - timedelta(minutes=5)) is None
    later = datetime.now(UTC) + timedelta(hours=1)
    assert not_before(later) == later
    assert not_before(None) is None
