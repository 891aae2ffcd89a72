"""The jobs a worker holds, and the slot accounting around them, behind one lock."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

from pg_pipeline.context import Context
from pg_pipeline.stage import StageSpec
from pg_pipeline.store import ClaimedJob
from pg_pipeline.worker.completer import Settled


@dataclass(eq=False, slots=True)
class InFlight:
    job: ClaimedJob
    spec: StageSpec
    ctx: Context
    isolated: bool  # runs in a child process: its timeout and cancel kill the child
    lease_until: float = field(default=0.0)  # monotonic estimate, for how long to retry writes
    #: monotonic, for a job run in a thread, from when it started; None without a timeout
    deadline: float | None = None
    started: bool = False  # a runner took it; before that it waits, claimed ahead
    returned: bool = False  # the run is over and its runner settles it
    abandoned: bool = False  # settled without its thread (timeout, cancel, shutdown)
    replaced: bool = False  # its thread is stuck in it and another thread took its slot
    thread_done: bool = False  # its runner thread has come back from it


class InFlightTable:
    """Claimed jobs by id. A job holds a slot from dispatch until its runner returns or it is
    abandoned; it stays in the table (and is heartbeated) until its write is confirmed. Slots
    beyond the runners' are jobs claimed ahead, waiting for a runner."""

    def __init__(
        self, slots: int, changed: threading.Event, min_timeout_s: float | None = None
    ) -> None:
        self.slots = slots
        #: the shortest timeout of the stages whose jobs the table holds (see next_deadline)
        self.min_timeout_s = min_timeout_s
        self.lock = threading.Lock()
        self._entries: dict[int, InFlight] = {}
        #: the entries running with a deadline, neither returned nor abandoned (each of those
        #: takes its entry out): the claim loop looks for overdue ones between claims, and
        #: walking every entry (a hundred claimed ahead) each time cost more than the jobs
        self._timed: dict[int, InFlight] = {}
        self._busy = 0
        self._waiting = 0  # dispatched, not yet taken by a runner
        self.changed = changed  # set when a slot is freed: the claim loop may claim again
        #: set when a job starts with a deadline sooner than the one next_deadline() last gave:
        #: whoever sleeps until that one (the timeouts thread) must look again
        self.sooner_deadline = threading.Event()
        self._watched = math.inf  # the deadline next_deadline() last gave; inf: none

    def add(self, entry: InFlight) -> None:
        self.add_all([entry])

    def add_all(self, entries: list[InFlight]) -> None:
        """Hold a claim's jobs, under one take of the lock."""
        with self.lock:
            held = self._entries
            for entry in entries:
                held[entry.job.id] = entry
            self._busy += len(entries)
            self._waiting += len(entries)

    def free(self, ahead: int = 0) -> int:
        """Slots to claim for, counting `ahead` more than there are runners."""
        with self.lock:
            return self.slots + ahead - self._busy

    def waiting(self) -> int:
        with self.lock:
            return self._waiting

    def start(self, entry: InFlight, now: float | None = None) -> bool:
        """A runner takes the job: False if it was abandoned (cancelled, or given back at
        shutdown) while it waited. Its timeout counts from here."""
        now = time.monotonic() if now is None else now
        with self.lock:
            self._waiting -= 1
            entry.started = True
            if entry.abandoned:
                return False
            if entry.isolated or entry.spec.timeout_s is None:
                return True
            entry.deadline = now + entry.spec.timeout_s
            self._timed[entry.job.id] = entry
            # Jobs of one stage start in deadline order, so this is rarely true: the event is
            # set once per sooner deadline, not once per job.
            sooner = entry.deadline < self._watched
            if sooner:
                self._watched = entry.deadline
        if sooner:
            self.sooner_deadline.set()
        return True

    def take_waiting(self) -> list[InFlight]:
        """Abandon every job still waiting for a runner, to give it back; the runner that
        later dequeues one skips it."""
        with self.lock:
            waiting = [e for e in self._entries.values() if not e.started and not e.abandoned]
            for entry in waiting:
                entry.abandoned = True
                self._busy -= 1
        if waiting:
            self._changed()
        return waiting

    def busy(self) -> int:
        with self.lock:
            return self._busy

    def settling(self) -> int:
        """Jobs whose run is over (returned or abandoned) and whose write is not yet confirmed:
        mostly plain completions waiting for their acknowledgement."""
        with self.lock:
            return len(self._entries) - self._busy

    def finish_run(self, entry: InFlight) -> bool:
        """The runner is done with the job: True if it settles it, False if it was abandoned
        (a timeout or a cancel got there first and its late result must be dropped)."""
        with self.lock:
            if entry.abandoned or entry.returned:
                return False
            entry.returned = True
            self._busy -= 1
            self._untime(entry)
        self._changed()
        return True

    def abandon(self, entry: InFlight) -> bool:
        """Take the job from its still-running thread: True if it was still running."""
        with self.lock:
            if entry.returned or entry.abandoned:
                return False
            entry.abandoned = True
            self._busy -= 1
            self._untime(entry)
        self._changed()
        return True

    def forget(self, entry: InFlight) -> None:
        with self.lock:
            if self._entries.get(entry.job.id) is entry:
                del self._entries[entry.job.id]
                self._untime(entry)

    def settled(self, job: ClaimedJob, settled: Settled) -> None:
        """A completer subscriber: a settled claim's lease is no longer needed."""
        self.forget_claim(job)

    def settled_all(self, jobs: list[ClaimedJob], settled: Settled) -> None:
        """settled() for a batch of claims, under one take of the lock."""
        with self.lock:
            entries, timed = self._entries, self._timed
            for job in jobs:
                entry = entries.get(job.id)
                if entry is not None and entry.job.claim == job.claim:
                    del entries[job.id]
                    if timed.get(job.id) is entry:
                        del timed[job.id]

    def forget_claim(self, job: ClaimedJob) -> None:
        """Forget the entry of this very claim of the job, if it is still here."""
        with self.lock:
            entry = self._entries.get(job.id)
            if entry is not None and entry.job.claim == job.claim:
                del self._entries[job.id]
                self._untime(entry)

    def _untime(self, entry: InFlight) -> None:
        if self._timed.get(entry.job.id) is entry:
            del self._timed[entry.job.id]

    def _changed(self) -> None:
        # Event.set takes a lock and notifies even when the event is set already: per job, that
        # was as dear as the table's own work. Skipping it then is safe: the claim loop clears
        # the event before it reads the table, so a set flag means its next read is still due.
        if not self.changed.is_set():
            self.changed.set()

    def get(self, job_id: int) -> InFlight | None:
        with self.lock:
            return self._entries.get(job_id)

    def held(self) -> list[InFlight]:
        """Jobs whose lease this worker still needs: running, or settled but not confirmed."""
        with self.lock:
            return [e for e in self._entries.values() if not e.abandoned]

    def running(self) -> list[InFlight]:
        with self.lock:
            return [e for e in self._entries.values() if not e.returned and not e.abandoned]

    def overdue(self, now: float | None = None) -> list[InFlight]:
        """Thread-run jobs past their deadline, abandoned here so exactly one party settles."""
        now = time.monotonic() if now is None else now
        with self.lock:
            due = [e for e in self._timed.values() if e.deadline is not None and now >= e.deadline]
            for entry in due:
                entry.abandoned = True
                self._busy -= 1
                self._untime(entry)
        if due:
            self._changed()
        return due

    def next_deadline(self, now: float | None = None) -> float | None:
        """The soonest deadline of a running job; from now on a sooner one sets sooner_deadline.

        With no job running and min_timeout_s known: `now` plus that, which no job starting
        later can beat. Watching nothing instead, the first job after every lull (each claim,
        in a drain) woke the timeouts thread to walk the table; now that thread wakes once per
        min_timeout_s of quiet, for nothing."""
        with self.lock:
            deadlines = [e.deadline for e in self._timed.values() if e.deadline is not None]
            soonest: float | None
            if deadlines:
                soonest = min(deadlines)
            elif self.min_timeout_s is not None:
                soonest = (time.monotonic() if now is None else now) + self.min_timeout_s
            else:
                soonest = None
            self._watched = math.inf if soonest is None else soonest
        return soonest
