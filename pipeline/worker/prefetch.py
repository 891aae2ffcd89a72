"""How many jobs to claim ahead of a free runner.

Claiming ahead pays when jobs are short: a runner that finishes in a millisecond would
otherwise wait a claim's round trip for its next job. It costs when jobs are long: a parked job
waits behind a running one while another worker may be idle. So, unless told a number, the
worker claims ahead only while every stage it ran lately was fast, and then about as many jobs
as its runners get through in FAST_RUN_S: a worker never parks more than that much work.
"""

from __future__ import annotations

import time

#: a stage whose recent runs average more than this stops claiming ahead; and the work claimed
#: ahead per runner thread
FAST_RUN_S = 0.010
#: a stage not run for this long no longer counts
FORGET_AFTER_S = 60.0
#: the weight of the newest run in a stage's average
SMOOTHING = 0.2


class Prefetch:
    def __init__(self, concurrency: int, fixed: int | None, limit: int) -> None:
        self.concurrency = concurrency
        self.fixed = fixed
        self.limit = limit  # the most claimed ahead when the number is the worker's to choose
        # stage -> (average run seconds, monotonic time of the last run). Updated by runner
        # threads without a lock: a lost update only delays the average by one run.
        self._runs: dict[str, tuple[float, float]] = {}

    def observe(self, stage: str, seconds: float, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        previous = self._runs.get(stage)
        average = seconds if previous is None else previous[0] + SMOOTHING * (seconds - previous[0])
        self._runs[stage] = (average, now)

    def extra(self, now: float | None = None) -> int:
        """Jobs to claim beyond the free runners now."""
        if self.fixed is not None:
            return self.fixed
        now = time.monotonic() if now is None else now
        recent = [avg for avg, seen in list(self._runs.values()) if now - seen < FORGET_AFTER_S]
        if not recent or max(recent) > FAST_RUN_S:
            return 0
        per_runner = FAST_RUN_S / max(max(recent), 1e-6)
        return min(self.limit, max(self.concurrency, int(self.concurrency * per_runner)))
