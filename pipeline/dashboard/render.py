"""Templates and the small helpers they use: times, durations, JSON, the overview's chart."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from pg_pipeline.admin.status import Minute

#: What a missing value shows as: a dash, not "None".
NONE = "\u2013"
#: Characters of a payload or output shown; the rest is cut, with a note saying so.
JSON_SHOWN = 20_000


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("pg_pipeline.dashboard", "templates"),
        # Every value is escaped unless a template says otherwise, and none does: a payload or
        # an error holding <script> is shown as text.
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["seconds"] = seconds
    env.filters["when"] = when
    env.filters["pretty"] = pretty
    env.filters["value"] = value
    env.filters["percent"] = percent
    return env


def seconds(value: float | None) -> str:
    if value is None:
        return NONE
    value = max(0.0, value)
    if value < 60:
        return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"
    if value < 3600:
        return f"{value / 60:.1f} min"
    if value < 86_400:
        return f"{value / 3600:.1f} h"
    return f"{value / 86_400:.1f} d"


def when(moment: datetime | None) -> str:
    if moment is None:
        return NONE
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def pretty(data: Any) -> str:
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) > JSON_SHOWN:
        return text[:JSON_SHOWN] + f"\n… ({len(text) - JSON_SHOWN} more characters not shown)"
    return text


def value(data: Any) -> str:
    """A field's value in a table cell: text as it is, anything else as compact JSON."""
    if data is None:
        return NONE
    if isinstance(data, str):
        return data
    return json.dumps(data, ensure_ascii=False, default=str)


def percent(fraction: Any) -> str:
    return f"{float(fraction) * 100:.0f}%" if isinstance(fraction, int | float) else NONE


@dataclass(frozen=True)
class Bar:
    x: float
    done_y: float
    done_h: float
    failed_y: float
    failed_h: float
    title: str


@dataclass(frozen=True)
class Tick:
    """A labelled mark on an axis: its position along the axis, in the plot's units."""

    at: float
    label: str


@dataclass(frozen=True)
class Chart:
    width: int  #: of the plot (the bars), inside the margins
    height: int
    bars: list[Bar]
    peak: int
    done: int
    failed: int
    #: jobs per minute up the left side: 0, half the busiest minute (when a whole number
    #: apart from both), the busiest; `at` is a y within the plot
    y_ticks: list[Tick]
    #: time along the bottom: an hour ago, half an hour ago, now; `at` is an x within the plot
    x_ticks: list[Tick]
    left: int = 36  #: room for the y labels
    top: int = 8  #: room for the top label's upper half
    right: int = 16  #: room for the last time label's end
    bottom: int = 18  #: room for the time labels

    @property
    def outer_width(self) -> int:
        return self.left + self.width + self.right

    @property
    def outer_height(self) -> int:
        return self.top + self.height + self.bottom


def chart(minutes: list[Minute], now: datetime, width: int = 600, height: int = 100) -> Chart:
    """The last hour per minute as stacked bars (done below, failed on top), scaled to the
    busiest minute, with a labelled scale of jobs per minute and of time. Minutes without a
    finished job have no row, and a bar of nothing."""
    by_minute = {m.minute.astimezone(UTC).replace(second=0, microsecond=0): m for m in minutes}
    last = now.astimezone(UTC).replace(second=0, microsecond=0)
    slots = [last - timedelta(minutes=59 - i) for i in range(60)]
    peak = max([m.done + m.failed for m in minutes] + [1])
    step = width / 60
    bars = []
    for i, slot in enumerate(slots):
        found = by_minute.get(slot)
        done, failed = (found.done, found.failed) if found else (0, 0)
        done_h = height * done / peak
        failed_h = height * failed / peak
        bars.append(
            Bar(
                x=round(i * step + 1, 1),
                done_y=round(height - done_h, 1),
                done_h=round(done_h, 1),
                failed_y=round(height - done_h - failed_h, 1),
                failed_h=round(failed_h, 1),
                title=f"{slot:%H:%M} UTC: {done} done, {failed} failed",
            )
        )
    levels = [0, peak // 2, peak] if peak >= 4 else [0, peak]
    return Chart(
        width=width,
        height=height,
        bars=bars,
        peak=peak,
        done=sum(m.done for m in minutes),
        failed=sum(m.failed for m in minutes),
        y_ticks=[Tick(round(height - height * n / peak, 1), f"{n:,}") for n in levels],
        x_ticks=[
            Tick(0.0, f"\u221260 min ({slots[0]:%H:%M})"),
            Tick(round(width / 2, 1), f"\u221230 min ({slots[30]:%H:%M})"),
            Tick(float(width), f"now ({last:%H:%M} UTC)"),
        ],
    )
