"""A schedule's definition checked: pg_pipeline.inputs' checks, raised as InvalidSchedule."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from pg_pipeline import inputs
from pg_pipeline.errors import PipelineError

T = TypeVar("T")


class InvalidSchedule(PipelineError, ValueError):
    """A schedule's definition cannot be used (bad cron, period, timezone, name). Nothing was
    stored."""


def _checked(check: Callable[[Any], T], value: Any) -> T:
    try:
        return check(value)
    except ValueError as exc:
        raise InvalidSchedule(str(exc)) from None


def check_name(name: str) -> str:
    return _checked(inputs.schedule_name, name)


def check_timezone(name: str) -> ZoneInfo:
    return ZoneInfo(_checked(inputs.timezone, name))


def check_cron(cron: str) -> str:
    """`cron`, whitespace collapsed, if cronsim reads it and it fires at all; else
    InvalidSchedule with cronsim's reason. Five fields, or six with seconds first."""
    return _checked(inputs.cron, cron)


def check_every(every: float | timedelta) -> float:
    return _checked(inputs.every, every)


def check_catch_up(catch_up: int) -> int:
    return _checked(inputs.catch_up, catch_up)
