"""The claim loop: claims as many jobs as there are free slots, hands them to the dispatcher,
and sleeps until a slot frees, a notification arrives or the poll is up."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence

from pipeline.db import DB_DOWN
from pipeline.reconnecting import Backoff
from pipeline.store import ClaimedJob, JobStore
from pipeline.worker.inflight import InFlightTable

log = logging.getLogger(__name__)


class Producer:
    """Claims; call settled() after a completion commits, so a claim that came back short
    (a tenant at its cap, say) is tried again at once rather than at the next poll."""

    def __init__(
        self,
        store: JobStore,
        table: InFlightTable,
        *,
        types: Sequence[str],
        caps: Mapping[str, int | None],
        worker_id: uuid.UUID,
        batch_max: int,
        poll_interval_s: float,
        retry_max_s: float,
        dispatch: Callable[[ClaimedJob], None],
        stopping: threading.Event,
        wake: threading.Event,
        on_claimed: Callable[[int, float], None] | None = None,
        ahead: Callable[[], int] | None = None,
    ) -> None:
        self.store = store
        self.table = table
        self.types = sorted(types)
        self.caps = dict(caps)
        self.worker_id = worker_id
        self.batch_max = batch_max
        self.poll_interval_s = poll_interval_s
        self.retry_max_s = retry_max_s
        self.dispatch = dispatch
        self.stopping = stopping
        self.wake = wake
        self.on_claimed = on_claimed  # (jobs, seconds) of each claim, for metrics
        self.ahead = ahead  # how many jobs to claim beyond the free runners
        #: The last claim got fewer jobs than it asked for: more may become claimable when a
        #: completion commits (a tenant's slot frees), not only when a local slot frees.
        self.short = False

    def run(self) -> None:
        backoff = Backoff(self.retry_max_s, first_s=0.1)
        while not self.stopping.is_set():
            self.wake.clear()
            ahead = self.ahead() if self.ahead is not None else 0
            free = self.table.free(ahead)
            want = min(free, self.batch_max)
            if ahead and self.table.waiting() > ahead // 2:
                # The runners have work in hand: claim once half of it is taken, in one trip,
                # rather than one job per finished one, a trip each.
                want = 0
            if want > 0:
                started = time.monotonic()
                try:
                    jobs = self.store.claim(self.types, want, self.worker_id, self.caps)
                except DB_DOWN as exc:
                    delay = backoff.next()
                    log.warning(
                        "claim failed, database unavailable (%s); retrying in %.1f s", exc, delay
                    )
                    self.stopping.wait(delay)
                    continue
                backoff.reset()
                self.short = len(jobs) < want
                if self.on_claimed is not None:
                    self.on_claimed(len(jobs), time.monotonic() - started)
                for job in jobs:
                    self.dispatch(job)
                if len(jobs) == want and want < free:
                    continue  # a full batch and slots left: more may be ready right now
            # One event for "a slot was freed" and "a job was announced": either ends the nap.
            self.wake.wait(self.poll_interval_s)

    def settled(self) -> None:
        """A completion committed: a claim that came back short may succeed now."""
        if self.short:
            self.wake.set()
