"""The claim loop: claims as many jobs as there are free slots, hands them to the dispatcher,
and sleeps until a slot frees, a notification arrives, a deadline is due or the poll is up."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence

from pipeline.db import DB_DOWN
from pipeline.retrying import Backoff
from pipeline.store import ClaimedJob, JobStore
from pipeline.worker.inflight import InFlightTable

log = logging.getLogger(__name__)


class Producer:
    def __init__(
        self,
        store: JobStore,
        table: InFlightTable,
        *,
        types: Sequence[str],
        worker_id: uuid.UUID,
        batch_max: int,
        poll_interval_s: float,
        retry_max_s: float,
        dispatch: Callable[[ClaimedJob], None],
        on_tick: Callable[[], float | None],
        stopping: threading.Event,
        wake: threading.Event,
    ) -> None:
        self.store = store
        self.table = table
        self.types = sorted(types)
        self.worker_id = worker_id
        self.batch_max = batch_max
        self.poll_interval_s = poll_interval_s
        self.retry_max_s = retry_max_s
        self.dispatch = dispatch
        self.on_tick = on_tick  # timeouts etc.; returns seconds until it next needs a tick
        self.stopping = stopping
        self.wake = wake

    def run(self) -> None:
        backoff = Backoff(self.retry_max_s, first_s=0.1)
        while not self.stopping.is_set():
            self.wake.clear()
            next_tick = self.on_tick()
            free = self.table.free()
            want = min(free, self.batch_max)
            if want > 0:
                try:
                    jobs = self.store.claim(self.types, want, self.worker_id)
                except DB_DOWN as exc:
                    delay = backoff.next()
                    log.warning(
                        "claim failed, database unavailable (%s); retrying in %.1f s", exc, delay
                    )
                    self.stopping.wait(delay)
                    continue
                backoff.reset()
                for job in jobs:
                    self.dispatch(job)
                if len(jobs) == want and want < free:
                    continue  # a full batch and slots left: more may be ready right now
            wait = (
                self.poll_interval_s if next_tick is None else min(self.poll_interval_s, next_tick)
            )
            # One event for "a slot was freed" and "a job was announced": either ends the nap.
            self.wake.wait(max(0.0, wait))
