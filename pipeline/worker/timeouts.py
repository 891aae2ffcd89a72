"""Job timeouts, for jobs run in a thread: past its deadline a job is settled as timed out, its
stage is told to stop (ctx.lost_lease), and its slot goes to a new runner thread at once, since a
thread cannot be interrupted. (A job run in a child process has its timeout enforced by the
Isolator, which kills the child.)

One thread sleeps until the soonest deadline; the in-flight table wakes it when a job starts
with a sooner one.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from pg_pipeline.outcomes import TimedOut, decide
from pg_pipeline.worker.completer import Completer
from pg_pipeline.worker.inflight import InFlightTable
from pg_pipeline.worker.runners import Runners


@dataclass
class Timeouts:
    table: InFlightTable
    runners: Runners
    completer: Completer
    halt: threading.Event  #: the worker's: its side threads are over

    def run(self) -> None:
        """The timeouts thread: until halt is set, settle overdue jobs, sleep until the next."""
        sooner = self.table.sooner_deadline
        while not self.halt.is_set():
            # Cleared before the table is read: a deadline added after the read sets it again.
            sooner.clear()
            wait = self.expire_once()
            sooner.wait(wait)

    def expire_once(self, now: float | None = None) -> float | None:
        """Settle the jobs past their deadline; seconds until the next deadline (None: none)."""
        for entry in self.table.overdue(time.monotonic() if now is None else now):
            entry.ctx.lost_lease.set()
            self.runners.replace(entry)
            outcome = TimedOut(entry.spec.timeout_s or 0.0)
            transition = decide(entry.spec, entry.job, outcome)
            self.completer.apply(
                entry.job, transition, until=entry.lease_until, usage=entry.ctx.usage_record
            )
        # Read again: settling the overdue jobs took a while.
        now = time.monotonic() if now is None else now
        deadline = self.table.next_deadline(now)
        if deadline is None:
            return None
        return max(0.0, deadline - now)

    def stop(self) -> None:
        """Wake the thread to see that halt is set."""
        self.table.sooner_deadline.set()
