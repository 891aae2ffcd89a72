"""pg_pipeline.inputs: one answer to "is this value acceptable", the same from the library, the
command line and the dashboard."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pg_pipeline import inputs
from pg_pipeline.commands import api
from pg_pipeline.dashboard import forms
from pg_pipeline.schedules import InvalidSchedule, check_cron
from pg_pipeline.validation import InvalidJob, check_priority

NOT_UTF8 = os.fsdecode(b"\xff")  # how Python hands over argv bytes that are not UTF-8

BAD: list[tuple[Callable[[Any], Any], Any, str]] = [
    (inputs.text, "a\x00b", "cannot contain a NUL character"),
    (inputs.text, NOT_UTF8, "is not valid UTF-8"),
    (inputs.tenant, "", "the tenant cannot be empty"),
    (inputs.tenant, "t" * 513, "a tenant id is 513 bytes long (UTF-8); at most 512 are allowed"),
    (inputs.tenant_id, "\u00e9" * 257, "tenant_id is 514 bytes long (UTF-8); at most 512"),
    (inputs.tenant_id, "a\x00b", "tenant_id cannot contain a NUL character"),
    (inputs.dedup_key, "k" * 1025, "dedup_key is 1,025 bytes long (UTF-8); at most 1,024"),
    (inputs.dedup_key, NOT_UTF8, "is not valid UTF-8"),
    (inputs.stage_name, "", "a stage name cannot be empty"),
    (inputs.integer, "12x", "is not an integer"),
    (inputs.integer, "9" * 5000, "is not an integer"),
    (inputs.job_id, "0", "must be a whole number within 1..9223372036854775807"),
    (inputs.cap, "-1", "must be a whole number within 0..2147483647"),
    (inputs.priority, 40_000, "priority must be within -32768..32767"),
    (inputs.priority, True, "priority must be an integer"),
    (inputs.duration, "7w", "is not a duration such as 90s"),
    (inputs.duration, "0s", "must be more than 0"),
    (inputs.instant, "tomorrow", "is not an ISO 8601 time"),
    (inputs.instant, "2026-12-01T09:30", "has no UTC offset: add one, e.g. Z or +01:00"),
    (inputs.start_time, "9999-12-31T23:00:00-10:00", "more than 100 years from now"),
    (inputs.utc_offset, "CET", "is not a UTC offset such as Z or +01:00"),
    (inputs.payload_text, "{n: 1}", "payload is not valid JSON"),
    (inputs.payload_text, '{"x": NaN}', "payload cannot be stored: NaN in field 'x'"),
    (inputs.schedule_name, " ", "a schedule needs a non-empty name"),
    (inputs.cron, "61 * * * *", "invalid cron expression '61 * * * *': Bad minute"),
    (inputs.timezone, "Mars/Olympus", "unknown timezone 'Mars/Olympus'"),
    (inputs.every, 0, "every must be more than 0 seconds"),
    (inputs.catch_up, 0, "catch_up must be within 1..1000"),
]


@pytest.mark.parametrize(("check", "value", "reason"), BAD, ids=lambda v: repr(v)[:40])
def test_a_check_refuses_with_a_value_error_of_one_line_giving_the_reason(
    check: Callable[[Any], Any], value: Any, reason: str
) -> None:
    with pytest.raises(ValueError) as caught:
        check(value)
    assert type(caught.value) is ValueError
    assert reason in str(caught.value) and "\n" not in str(caught.value)


# -- a time without a UTC offset ----------------------------------------------------------------


def test_a_time_without_an_offset_is_refused_by_the_cli_and_the_dashboard_alike() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="has no UTC offset: add one"):
        api.instant_arg("2026-12-01T09:30")
    with pytest.raises(forms.BadInput, match="since has no UTC offset: add one"):
        forms.instant({"since": "2026-12-01T09:30"}, "since")


def test_a_time_takes_the_offset_its_caller_states_and_keeps_its_own_first() -> None:
    utc = inputs.instant("2026-12-01T09:30", offset="Z")
    assert utc == datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    own = inputs.instant("2026-12-01T09:30+01:00", offset="Z")
    assert own.utcoffset() == timedelta(hours=1)
    assert inputs.instant("2026-12-01T09:30", offset="-05:30").utcoffset() == -timedelta(
        hours=5, minutes=30
    )
    # The dashboard's time fields send their zone along: `zone=Z`.
    since = forms.instant({"since": "2026-12-01T09:30", "zone": "Z"}, "since")
    assert since == datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize("offset", ["CET", "UTC", "01:00", "+25:00", ""])
def test_a_stated_offset_must_be_one(offset: str) -> None:
    with pytest.raises(ValueError, match="is not a UTC offset"):
        inputs.instant("2026-12-01T09:30", offset=offset)


# -- numbers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [" 7", "+7", "7_0", "\u0667", "7.0", "0x7", ""])
def test_a_whole_number_is_written_in_ascii_digits_alone(text: str) -> None:
    with pytest.raises(ValueError, match=r"must be a whole number within 0\.\.10"):
        inputs.whole_number(text, 0, 10)


def test_a_whole_number_at_either_end_of_its_range_is_accepted() -> None:
    assert inputs.whole_number("-3", -3, 3) == -3
    assert inputs.whole_number("3", -3, 3) == 3
    assert inputs.job_id("9223372036854775807") == 2**63 - 1


@pytest.mark.parametrize(
    ("text", "options", "reason"),
    [
        ("nan", {"high": 10}, "within 0..10"),
        ("inf", {}, "0 or more"),
        ("-1", {}, "0 or more"),
        ("0", {"above_zero": True}, "more than 0"),
        ("11", {"high": 10, "above_zero": True}, "more than 0 and at most 10"),
        ("soon", {}, "'soon' is not a number of seconds"),
    ],
)
def test_seconds_are_finite_and_within_their_bounds(
    text: str, options: dict[str, Any], reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        inputs.seconds(text, **options)


# -- one reason, whoever asks -------------------------------------------------------------------


def test_the_cli_and_the_dashboard_give_the_same_reason_the_dashboard_naming_its_field() -> None:
    with pytest.raises(argparse.ArgumentTypeError) as cli:
        api.job_id_arg("0")
    with pytest.raises(forms.BadInput) as form:
        forms.job_id("0", "before")
    assert str(form.value) == f"before {cli.value}"


def test_the_library_raises_the_same_reason_as_its_own_error() -> None:
    with pytest.raises(ValueError) as plain:
        inputs.priority(40_000)
    with pytest.raises(InvalidJob) as job:
        check_priority(40_000)
    assert str(job.value) == str(plain.value)
    with pytest.raises(ValueError) as plain:
        inputs.cron("0 25 * * *")
    with pytest.raises(InvalidSchedule) as schedule:
        check_cron("0 25 * * *")
    assert str(schedule.value) == str(plain.value)


def test_an_argument_type_names_what_argparse_reports_for_it() -> None:
    parser = argparse.ArgumentParser(prog="t", exit_on_error=False)
    parser.add_argument("--tenant", type=api.tenant_arg)
    with pytest.raises(argparse.ArgumentError, match="the tenant cannot be empty"):
        parser.parse_args(["--tenant", ""])
    assert parser.parse_args(["--tenant", "acme"]).tenant == "acme"


@pytest.mark.parametrize(
    ("check", "good", "bad"),
    [
        (
            inputs.weight,
            {"1": 1.0, "0.5": 0.5, "1e6": 1e6, "1e-6": 1e-6},
            # 1e-310: n / weight past the largest double, failing every claim of the stage
            ["0", "-1", "nan", "inf", "2e6", "x", "1e-7", "1e-310"],
        ),
        (inputs.budget_limit, {"0": 0.0, "2.5": 2.5, "1e9": 1e9}, ["-0.1", "nan", "inf", "x"]),
        (inputs.share, {"1": 1.0, "0.8": 0.8, "0.01": 0.01}, ["0", "1.01", "-1", "nan", "x"]),
    ],
)
def test_weights_limits_and_shares_are_finite_numbers_in_their_range(
    check: Callable[[str], float], good: dict[str, float], bad: list[str]
) -> None:
    assert {text: check(text) for text in good} == good
    for text in bad:
        with pytest.raises(ValueError):
            check(text)
