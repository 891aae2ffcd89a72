"""A drain kept fed, marked every second, and its rate in windows: the windows before, beside and
after a prune, and a control drain's (the same drain, fed the same way, with no prune) at the
same offsets from its start.

The drain's rate drifts over minutes by itself, so a window before the prune favours a short
prune and one after it a long one; a control run at the same offsets, alternated with the prune
runs, holds the drift constant. benchmarks/scale.py runs the drains (`--prune-days N` or
`--control-s S`) and appends each to `--runs-file FILE`; this module reads the marks, pairs the
runs and reports them.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks.compare.cpu import Meter, Reading

#: How often a fed drain is marked, seconds: a control's window edges fall on the first marks at
#: or after the prune run's, this much later at most.
MARK_EVERY_S = 1.0
PRUNE = "prune"
CONTROL = "control"
#: The prune run's windows, between its consecutive edges.
WINDOWS = ("before", "beside", "after")


@dataclass(frozen=True)
class Point:
    """A fed drain `offset` seconds (the database's clock) after its first mark: `done` of its
    jobs had finished by then; the CPU reading taken there."""

    offset: float
    done: int
    reading: Reading
    #: The relations a VACUUM (autovacuum's or a worker's) was working on at the mark, "(auto)"
    #: after autovacuum's: what a dip in the drain's rate may be sharing the cores with.
    vacuums: tuple[str, ...] = ()


@dataclass
class FedDrain:
    """One drain kept fed: a prune run (`edges` the offsets of its windows' edges: the start,
    the prune's start and end, the end of the window after it) or a control (no edges)."""

    kind: str
    at: str  #: when it started, UTC
    load: str  #: the 1-minute load average then
    points: list[Point]
    edges: list[float] = field(default_factory=list)
    prune_s: float = 0.0
    said: str = ""  #: the prune's output, or what the control stood for

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(line: str) -> FedDrain:
        raw = json.loads(line)
        raw["points"] = [
            Point(p["offset"], p["done"], Reading(**p["reading"]), tuple(p.get("vacuums", ())))
            for p in raw["points"]
        ]
        return FedDrain(**raw)


def done_by_mark(buckets: dict[int, int], marks: int) -> list[int]:
    """Jobs finished before each of `marks` marks, from the counts by
    `width_bucket(finished_at, marks' clocks)`: bucket b holds the jobs finished at or after
    mark b - 1 (0-based) and before mark b, so those before mark k are buckets 0..k."""
    done, total = [], 0
    for k in range(marks):
        total += buckets.get(k, 0)
        done.append(total)
    return done


def point_at(points: Sequence[Point], offset: float) -> Point | None:
    """The first point at `offset` or after it; None when the drain ended before."""
    for point in points:
        if point.offset >= offset - 1e-9:
            return point
    return None


@dataclass(frozen=True)
class Window:
    rate: float  #: jobs/s; nan when the drain did not reach the window's end
    other_pct: float  #: the other sessions' CPU, % of all cores
    start: float  #: the offsets actually read (the marks at or after the ones asked for)
    end: float


def window(points: Sequence[Point], start: float, end: float) -> Window:
    """The drain's rate and the other load from the first mark at `start` to the first at
    `end`."""
    a, b = point_at(points, start), point_at(points, end)
    if a is None or b is None or b.offset <= a.offset:
        return Window(math.nan, math.nan, start, end)
    other = Meter.usage(a.reading, b.reading).other_busy_pct
    return Window((b.done - a.done) / (b.offset - a.offset), other, a.offset, b.offset)


def windows(drain: FedDrain, edges: Sequence[float]) -> dict[str, Window]:
    """The drain's WINDOWS between `edges` (a prune run's)."""
    return {
        name: window(drain.points, start, end)
        for name, start, end in zip(WINDOWS, edges, edges[1:], strict=False)
    }


def pairs(runs: Sequence[FedDrain]) -> list[tuple[FedDrain, FedDrain, str]]:
    """The runs two by two in the order run (a prune and a control each), as (prune, control,
    which ran first); a pair of one kind twice, or a run left over, is refused."""
    if len(runs) % 2:
        raise ValueError(f"{len(runs)} runs: a pair is a prune run and a control run")
    found = []
    for first, second in zip(runs[::2], runs[1::2], strict=True):
        if {first.kind, second.kind} != {PRUNE, CONTROL}:
            raise ValueError(f"a pair of {first.kind} and {second.kind} ({first.at})")
        prune, control = (first, second) if first.kind == PRUNE else (second, first)
        found.append((prune, control, first.kind))
    return found


def read_runs(path: Path) -> list[FedDrain]:
    if not path.exists():
        return []
    return [FedDrain.from_json(line) for line in path.read_text().splitlines() if line.strip()]


def append_run(path: Path, drain: FedDrain) -> None:
    with path.open("a") as out:
        out.write(drain.to_json() + "\n")


def compared(prune: FedDrain, control: FedDrain) -> dict[str, tuple[Window, Window]]:
    """Each of the prune run's windows beside the control's at the same offsets."""
    ours, theirs = windows(prune, prune.edges), windows(control, prune.edges)
    return {name: (ours[name], theirs[name]) for name in ours}


def pairs_said(runs: Sequence[FedDrain]) -> str:
    """A markdown table of the pairs: per window, the prune run's rate, the control's at the
    same offsets, their ratio and each one's other load; then the beside ratios' range."""

    def rate(w: Window) -> str:
        return "-" if math.isnan(w.rate) else f"{w.rate:,.0f}"

    def pct(w: Window) -> str:
        return "-" if math.isnan(w.other_pct) else f"{w.other_pct:.0f}"

    lines = [
        "| pair | first | prune at (UTC), load | control at, load | prune s | window (s in) "
        "| prune jobs/s | control jobs/s | prune ÷ control | other load % prune / control |",
        "|---|---|---|---|---:|---|---:|---:|---:|---|",
    ]
    beside = []
    for i, (prune, control, first) in enumerate(pairs(runs), 1):
        for name, (ours, theirs) in compared(prune, control).items():
            share = ours.rate / theirs.rate if theirs.rate else math.nan
            if name == "beside":
                beside.append(share)
            lines.append(
                f"| {i} | {first} | {prune.at}, {prune.load} | {control.at}, {control.load} "
                f"| {prune.prune_s:.0f} | {name} {ours.start:.0f}-{ours.end:.0f} "
                f"| {rate(ours)} | {rate(theirs)} | {share:.2f} | {pct(ours)} / {pct(theirs)} |"
            )
    known = [b for b in beside if not math.isnan(b)]
    if known:
        lines.append("")
        lines.append(
            f"beside ÷ control-beside over {len(known)} pairs: {min(known):.2f}-{max(known):.2f}"
            f" (median {statistics.median(known):.2f}; the bar: 0.90)"
        )
    return "\n".join(lines)


def rate_by_span(
    drain: FedDrain, span_s: float
) -> list[tuple[float, float, float, tuple[str, ...]]]:
    """The drain's rate in consecutive spans of `span_s` from its start: (start offset,
    jobs/s, other load %, the relations seen under VACUUM at its marks), to see it drift and
    what it shared the machine with."""
    out = []
    start = 0.0
    last = drain.points[-1].offset if drain.points else 0.0
    while start + span_s <= last + 1e-9:
        w = window(drain.points, start, start + span_s)
        seen = {v for p in drain.points if w.start <= p.offset <= w.end for v in p.vacuums}
        out.append((w.start, w.rate, w.other_pct, tuple(sorted(seen))))
        start += span_s
    return out
