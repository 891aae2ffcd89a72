"""LISTEN on a connection of its own: a hint that wakes idle workers, never the only signal."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg

from pipeline.db import CONNECT_TIMEOUT_S, DB_DOWN
from pipeline.queries import Q

log = logging.getLogger(__name__)

JOBS_CHANNEL = "pipeline_jobs"
CANCEL_CHANNEL = "pipeline_cancel"


class Listener:
    def __init__(
        self,
        dsn: str,
        *,
        on_ready: Callable[[str], None],
        on_cancel: Callable[[int, int], None],
        stop: threading.Event,
        retry_max_s: float,
    ) -> None:
        self._dsn = dsn
        self._on_ready = on_ready
        self._on_cancel = on_cancel
        self._stop = stop
        self._retry_max_s = retry_max_s

    def run(self) -> None:
        delay = 0.1
        while not self._stop.is_set():
            try:
                self._listen()
            except DB_DOWN as exc:
                log.warning("listener lost its connection (%s); polling until it is back", exc)
                # Notifications sent while we were away are gone: poll once now.
                self._on_ready("")
                self._stop.wait(delay)
                delay = min(self._retry_max_s, delay * 2)

    def _listen(self) -> None:
        with psycopg.connect(
            self._dsn,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name="pg-pipeline listener",
        ) as conn:
            conn.execute(Q["listen"])
            self._on_ready("")  # anything enqueued before LISTEN took hold
            while not self._stop.is_set():
                for note in conn.notifies(timeout=0.5):
                    if note.channel == JOBS_CHANNEL:
                        self._on_ready(note.payload)
                    elif note.channel == CANCEL_CHANNEL:
                        job_id, _, attempts = note.payload.partition(":")
                        self._on_cancel(int(job_id), int(attempts or 0))
