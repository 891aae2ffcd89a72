"""One heartbeat statement per beat extends every lease the worker holds and keeps its liveness
row (re-creating it if an outage let it be pruned).

A job row another transaction holds locked (an operator's open transaction) is skipped, not
waited for: a wait would hold every other lease's extension up while the lock lasts, and they
would run out. The locked job stays this worker's: reclaim skips locked rows too."""

from __future__ import annotations

import logging
import threading
import time

import psycopg

from pg_pipeline.db import outage
from pg_pipeline.store import JobStore, WorkerInfo
from pg_pipeline.worker.inflight import InFlightTable

log = logging.getLogger(__name__)

#: beats per lease: a lease survives two missed beats and a slow one
BEATS_PER_LEASE = 3


class Heartbeat:
    def __init__(
        self,
        store: JobStore,
        worker: WorkerInfo,
        table: InFlightTable,
        *,
        interval_s: float,
        halt: threading.Event,
    ) -> None:
        self.store = store
        self.worker = worker
        self.table = table
        self.interval_s = interval_s  #: the beat when no held lease asks for a faster one
        self._halt = halt
        self._wake = threading.Event()
        self._locked: set[int] = set()  #: held jobs whose rows were locked at the last beat
        self._said_locked: set[int] = set()  #: those of them already logged

    def interval(self) -> float:
        """The beat that covers the shortest lease actually held, not just the stage default:
        a row can carry a lease shorter than its stage's current setting."""
        leases = [e.job.lease_seconds for e in self.table.held()]
        if not leases:
            return self.interval_s
        return max(0.05, min(self.interval_s, min(leases) / BEATS_PER_LEASE))

    def notice(self, lease_seconds: int) -> None:
        """A job with this lease was claimed: beat sooner if it needs that."""
        if lease_seconds / BEATS_PER_LEASE < self.interval_s:
            self._wake.set()

    def run(self) -> None:
        last = time.monotonic()
        while not self._halt.is_set():
            wait = self.interval() - (time.monotonic() - last)
            if wait > 0:
                self._wake.wait(wait)
                self._wake.clear()
                if time.monotonic() - last < self.interval():
                    continue  # woken to recompute the beat, not yet due
            if self._halt.is_set():
                return
            last = time.monotonic()
            self.beat_once()

    def beat_once(self) -> None:
        held = self.table.held()
        try:
            owned = self.store.heartbeat(self.worker, [e.job.fence for e in held])
        except psycopg.Error as exc:
            if not outage(exc):
                raise
            log.warning("heartbeat failed, database unavailable (%s)", exc)
            return
        now = time.monotonic()
        self._note_locked({job_id for job_id, extended in owned.items() if not extended})
        for entry in held:
            extended = owned.get(entry.job.id)  # False: ours, but its row is locked elsewhere
            if extended:
                entry.lease_until = now + entry.job.lease_seconds
            elif extended is None and not entry.returned and not entry.ctx.lost_lease.is_set():
                log.warning(
                    "job %s (%s) claim %d lost its lease; telling the stage",
                    entry.job.id,
                    entry.job.type,
                    entry.job.claim,
                )
                entry.ctx.lost_lease.set()

    def _note_locked(self, locked: set[int]) -> None:
        # A row locked at one beat is often a moment's lock (this worker's own completion of
        # it, a reader's FOR SHARE); locked at two beats in a row, it is worth a word.
        for job_id in sorted((locked & self._locked) - self._said_locked):
            log.warning(
                "job %s: its row is locked by another transaction; its lease is not extended "
                "while that lasts (nor can anyone reclaim it)",
                job_id,
            )
        self._said_locked = (self._said_locked | (locked & self._locked)) & locked
        self._locked = locked

    def stop(self) -> None:
        self._wake.set()
