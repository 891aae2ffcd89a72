"""LISTEN on a connection of its own: a hint that wakes idle workers, never the only signal.

Anyone who can connect may NOTIFY on our channels, so a payload is data to check, not to
trust: a malformed or oversized one is logged once per channel and dropped. Nothing a
notification carries can stop the listener, and so the worker.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable

import psycopg

from pipeline.db import CONNECT_TIMEOUT_S, DB_DOWN
from pipeline.queries import Q
from pipeline.reconnecting import Backoff

log = logging.getLogger(__name__)

JOBS_CHANNEL = "pipeline_jobs"
CANCEL_CHANNEL = "pipeline_cancel"
MAX_PAYLOAD_CHARS = 200  #: a job type or "id:claims" is far shorter; longer is not ours
_CANCEL = re.compile(r"([0-9]{1,19}):([0-9]{1,10})")


def parse_cancel(payload: str) -> tuple[int, int] | None:
    """'id:claims' as numbers, or None when the payload is not of that form."""
    match = _CANCEL.fullmatch(payload)
    if match is None:
        return None
    job_id, claim = int(match[1]), int(match[2])
    if job_id > 2**63 - 1 or claim > 2**31 - 1:
        return None
    return job_id, claim


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
        self._warned: set[str] = set()

    def run(self) -> None:
        backoff = Backoff(self._retry_max_s, first_s=0.1)
        while not self._stop.is_set():
            try:
                self._listen(backoff)
            except DB_DOWN as exc:
                log.warning("listener lost its connection (%s); polling until it is back", exc)
            except psycopg.Error as exc:
                # Not an outage (a pooler that refuses LISTEN, a revoked grant): the worker
                # polls regardless, so keep trying at the slowest pace instead of dying.
                log.warning("listener failed (%s); polling until it works", exc)
            # Notifications sent while we were away are gone: poll once now.
            self._on_ready("")
            self._stop.wait(backoff.next())

    def _listen(self, backoff: Backoff) -> None:
        with psycopg.connect(
            self._dsn,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name="pg-pipeline listener",
            prepare_threshold=None,
        ) as conn:
            conn.execute(Q["listen"])
            backoff.reset()
            self._on_ready("")  # anything enqueued before LISTEN took hold
            while not self._stop.is_set():
                for note in conn.notifies(timeout=0.5):
                    self.handle(note.channel, note.payload)

    def handle(self, channel: str, payload: str) -> None:
        """One notification; never raises."""
        try:
            if len(payload) > MAX_PAYLOAD_CHARS:
                self._drop(channel, f"an oversized payload ({len(payload)} characters)")
            elif channel == JOBS_CHANNEL:
                self._on_ready(payload)
            elif channel == CANCEL_CHANNEL:
                parsed = parse_cancel(payload)
                if parsed is None:
                    self._drop(channel, f"a malformed payload {payload[:40]!r}")
                else:
                    self._on_cancel(*parsed)
        except Exception:
            log.exception("notification on %s could not be handled; ignored", channel)

    def _drop(self, channel: str, what: str) -> None:
        if channel not in self._warned:
            self._warned.add(channel)
            log.warning(
                "ignoring %s on %s (further ones are ignored silently); pg-pipeline did not "
                "send it",
                what,
                channel,
            )
