"""Reconnecting: one way to wait out a database outage (delays that double up to a cap), shared
by every loop that talks to Postgres (claims, settling, the listener), so they all recover alike.
(A failed job's retry delays are pipeline/retry_delays.py's.)"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg

from pg_pipeline.db import outage

log = logging.getLogger(__name__)

T = TypeVar("T")

FIRST_DELAY_S = 0.05  #: the first wait after a failure; it doubles up to the cap


class Backoff:
    """Delays that double from FIRST_DELAY_S up to max_s; reset() after a success."""

    def __init__(self, max_s: float, first_s: float = FIRST_DELAY_S) -> None:
        self.max_s = max_s
        self.first_s = first_s
        self._next = first_s

    def next(self) -> float:
        delay = self._next
        self._next = min(self.max_s, self._next * 2)
        return delay

    def reset(self) -> None:
        self._next = self.first_s


def retry_db(
    what: str,
    call: Callable[[], T],
    *,
    halt: threading.Event,
    max_delay_s: float,
    until: float | None = None,
) -> T | None:
    """Call until it gets through the database; None if `until` (monotonic) passes first or
    `halt` is set. Only outages (pg_pipeline.db.outage) are retried: a refusal is the caller's."""
    backoff = Backoff(max_delay_s)
    while True:
        try:
            return call()
        except psycopg.Error as exc:
            if not outage(exc):
                raise
            if halt.is_set() or (until is not None and time.monotonic() >= until):
                log.warning("%s: giving up, database unavailable (%s)", what, exc)
                return None
            log.warning("%s failed, database unavailable (%s); retrying", what, exc)
            halt.wait(backoff.next())
