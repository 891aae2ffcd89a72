"""How many jobs to claim ahead of a free runner.

Claiming ahead pays when jobs are short: a runner that finishes in a millisecond would
otherwise wait a claim's round trip for its next job. It costs when jobs are long: a parked job
waits behind a running one while another worker may be idle. So, unless told a number, the
worker claims ahead only while every stage it ran lately was fast, and then about as many jobs
as its runners get through in FAST_RUN_S: a worker never parks more than that much work.

A stage's pace is the median of its recent runs, not their mean. A run is timed by the wall
clock, and a stall of the whole process (the GIL, a machine with more runnable threads than
cores) stretches every run in flight at once, at most one per runner: sixteen workers of no-op
jobs on two cores saw runs of 3 us at the median and a few in a thousand of 10-145 ms, and a
mean that one such run put above FAST_RUN_S stopped claiming ahead for the next twenty runs,
so a worker claimed its runners' 8 jobs at a time instead of 200 (benchmarks/FLEET.md). The
median of a little over twice as many runs as there are runners ignores a stall, and shows a
stage that turned slow once each runner has met it.
"""

from __future__ import annotations

import time
from collections import deque

#: a stage whose recent runs' median is above this stops claiming ahead; and the work claimed
#: ahead per runner thread
FAST_RUN_S = 0.010
#: a stage not run for this long no longer counts
FORGET_AFTER_S = 60.0


class Prefetch:
    def __init__(self, concurrency: int, fixed: int | None, limit: int) -> None:
        self.concurrency = concurrency
        self.fixed = fixed
        self.limit = limit  # the most claimed ahead when the number is the worker's to choose
        # runs a stage's median is taken over: a stall stretches at most one per runner, fewer
        # than half of them
        self._window = 2 * max(1, concurrency) + 1
        # Updated by runner threads without a lock: deque.append and a dict's item assignment
        # are atomic, and a lost update only delays the median by one run.
        self._runs: dict[str, deque[float]] = {}  # stage -> its recent runs' seconds
        self._seen: dict[str, float] = {}  # stage -> monotonic time of its last run

    def observe(self, stage: str, seconds: float, now: float | None = None) -> None:
        runs = self._runs.get(stage)
        if runs is None:
            runs = self._runs.setdefault(stage, deque(maxlen=self._window))
        runs.append(seconds)
        self._seen[stage] = time.monotonic() if now is None else now

    def extra(self, now: float | None = None) -> int:
        """Jobs to claim beyond the free runners now."""
        if self.fixed is not None:
            return self.fixed
        now = time.monotonic() if now is None else now
        paces = [
            _median(runs)
            for stage, runs in list(self._runs.items())
            if now - self._seen.get(stage, -FORGET_AFTER_S) < FORGET_AFTER_S and runs
        ]
        if not paces or max(paces) > FAST_RUN_S:
            return 0
        per_runner = FAST_RUN_S / max(max(paces), 1e-6)
        return min(self.limit, max(self.concurrency, int(self.concurrency * per_runner)))


def _median(runs: deque[float]) -> float:
    """The middle run, the slower of the two in an even number."""
    ordered = sorted(runs.copy())  # copy: a runner thread may append meanwhile
    return ordered[len(ordered) // 2]
