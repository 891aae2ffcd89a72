"""LISTEN on a connection of its own: a hint that wakes idle workers, never the only signal.

Anyone who can connect may NOTIFY on our channels (it takes no privilege), so a notification
is a hint to check, never an order: a malformed or oversized payload is logged once per channel
and dropped; a job announcement only wakes the claim loop (which heeds them sparingly after one
that found nothing: see Producer.announced); and a cancel is acted on only once the job's row
says so (pipeline/worker/cancels.py). Notifications that arrive together are handled together:
one wake-up per job type, and one check for every cancel of a batch, at most one check per
CANCEL_CHECK_INTERVAL_S. Nothing a notification carries can stop the listener, and so the
worker.
"""

from __future__ import annotations

import contextlib
import logging
import re
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable

import psycopg

from pg_pipeline.db import CONNECT_TIMEOUT_S, outage
from pg_pipeline.queries import Q, configured_schema
from pg_pipeline.queries import channel as channel_name
from pg_pipeline.reconnecting import Backoff

log = logging.getLogger(__name__)

#: The channels of this process's schema (pipeline/queries.py), as Q["listen"] names them.
JOBS_CHANNEL = channel_name("jobs", configured_schema())
CANCEL_CHANNEL = channel_name("cancel", configured_schema())
MAX_PAYLOAD_CHARS = 200  #: a job type or "id:claims" is far shorter; longer is not ours
#: The shortest time between two checks of cancel notifications: each costs a read, so a flood
#: of forged ones for jobs this worker holds costs at most this many reads a second (the hints
#: that arrive meanwhile wait, and go in the next check together).
CANCEL_CHECK_INTERVAL_S = 0.1
#: Cancel hints held for the next check at most; more in one interval are dropped (a job that
#: was cancelled all the same is found by the heartbeat, whose statement sees it is not running).
MAX_PENDING_CANCELS = 1000
_CANCEL = re.compile(r"([0-9]{1,19}):([0-9]{1,10})")

Hint = tuple[int, int]  #: (job id, claim) from a cancel notification


def parse_cancel(payload: str) -> Hint | None:
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
        on_cancel: Callable[[list[Hint]], None],
        stop: threading.Event,
        retry_max_s: float,
    ) -> None:
        """on_ready(job_type) for an announcement ("" after a reconnect: any type);
        on_cancel(hints) for the cancel notifications of a batch, to be checked."""
        self._dsn = dsn
        self._on_ready = on_ready
        self._on_cancel = on_cancel
        self._stop = stop
        self._retry_max_s = retry_max_s
        self._warned: set[str] = set()
        self._cancels: dict[Hint, None] = {}  # pending hints, in arrival order, once each
        self._next_check = 0.0  # monotonic: the earliest the next cancel check may run
        #: While run() runs: a socket pair whose reading end the wait sleeps on beside the
        #: connection's, written by stop(); the wait needs no timeout to see a stop.
        self._stopper: tuple[socket.socket, socket.socket] | None = None
        self._stopper_lock = threading.Lock()

    def stop(self) -> None:
        """Wake the thread to see that stop is set (call it after setting stop)."""
        with self._stopper_lock:
            if self._stopper is not None:
                # Full: it was written already, and is never read.
                with contextlib.suppress(OSError):
                    self._stopper[1].send(b"\0")

    def run(self) -> None:
        pair = socket.socketpair()
        pair[1].setblocking(False)
        with self._stopper_lock:
            self._stopper = pair
        try:
            self._run(pair[0])
        finally:
            with self._stopper_lock:
                self._stopper = None
                for end in pair:
                    end.close()

    def _run(self, stopper: socket.socket) -> None:
        backoff = Backoff(self._retry_max_s, first_s=0.1)
        while not self._stop.is_set():
            try:
                self._listen(backoff, stopper)
            except psycopg.Error as exc:
                if outage(exc):
                    log.warning("listener lost its connection (%s); polling until it is back", exc)
                else:
                    # A refusal (a pooler that refuses LISTEN, a revoked grant): the worker
                    # polls regardless, so keep trying at the slowest pace instead of dying.
                    log.warning("listener failed (%s); polling until it works", exc)
            # Notifications sent while we were away are gone: poll once now.
            self._on_ready("")
            self._stop.wait(backoff.next())

    def _listen(self, backoff: Backoff, stopper: socket.socket) -> None:
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
                # What has arrived (or came in with a statement's answer), without waiting.
                notes = list(conn.notifies(timeout=0))
                if not notes:
                    # Then one sleep on the socket until something arrives, the connection
                    # drops (the socket reads as ready: notifies() raises), stop() writes or
                    # a held cancel's check is due. psycopg's own wait (notifies with a
                    # timeout) wakes every 0.1 s to look for signals: 10 of an idle worker's
                    # 19 wakeups a second, 1.6 of its 4 ms of CPU a second (2 cores, measured),
                    # which sixteen idle workers, or sixteen draining, pay together; a timeout
                    # to see a stop cost 2 wakeups and 0.34 ms a second (benchmarks/FLEET.md).
                    select.select([conn.fileno(), stopper.fileno()], [], [], self._wait_s())
                    notes = list(conn.notifies(timeout=0))
                self.handle_batch((note.channel, note.payload) for note in notes)

    def _wait_s(self) -> float | None:
        """Until the held cancels' check is due; None (no timeout) with none held."""
        if not self._cancels:
            return None
        return max(0.0, self._next_check - time.monotonic())

    def handle(self, channel: str, payload: str) -> None:
        """One notification, as a batch of its own; never raises."""
        self.handle_batch([(channel, payload)])

    def handle_batch(self, notes: Iterable[tuple[str, str]]) -> None:
        """Notifications that arrived together: each job type announced wakes the claim loop
        once, and the cancels are checked together when the last check is far enough back.
        Never raises."""
        ready: dict[str, None] = {}
        for channel, payload in notes:
            try:
                self._sort(channel, payload, ready)
            except Exception:
                log.exception("notification on %s could not be handled; ignored", channel)
        for job_type in ready:
            try:
                self._on_ready(job_type)
            except Exception:
                log.exception("announcement of %r could not be handled; ignored", job_type)
        self._check_cancels()

    def _sort(self, channel: str, payload: str, ready: dict[str, None]) -> None:
        if len(payload) > MAX_PAYLOAD_CHARS:
            self._drop(channel, f"an oversized payload ({len(payload)} characters)")
        elif channel == JOBS_CHANNEL:
            if payload:
                ready[payload] = None
            else:  # "" is the listener's own "claim now", which no notification may say
                self._drop(channel, "an empty payload")
        elif channel == CANCEL_CHANNEL:
            hint = parse_cancel(payload)
            if hint is None:
                self._drop(channel, f"a malformed payload {payload[:40]!r}")
            elif len(self._cancels) < MAX_PENDING_CANCELS:
                self._cancels[hint] = None
            elif "overflow" not in self._warned:
                self._warned.add("overflow")
                log.warning(
                    "more than %d cancel notifications within %.1f s: the rest are dropped (a "
                    "job really cancelled is found by the next heartbeat)",
                    MAX_PENDING_CANCELS,
                    CANCEL_CHECK_INTERVAL_S,
                )

    def _check_cancels(self) -> None:
        now = time.monotonic()
        if not self._cancels or now < self._next_check:
            return
        hints, self._cancels = list(self._cancels), {}
        self._next_check = now + CANCEL_CHECK_INTERVAL_S
        try:
            self._on_cancel(hints)
        except Exception:
            log.exception("cancel notifications could not be checked; ignored")

    def _drop(self, channel: str, what: str) -> None:
        if channel not in self._warned:
            self._warned.add(channel)
            log.warning(
                "ignoring %s on %s (further ones are ignored silently); pg-pipeline did not "
                "send it",
                what,
                channel,
            )
