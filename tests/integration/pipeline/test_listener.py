"""The listener against a real server: it hears announcements, sleeps while none come, sees a
dropped connection and a stop without waking to look for them."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from pg_pipeline.listener import JOBS_CHANNEL, Listener
from tests.support.waiting import wait_for


def wakeups(thread_id: int) -> int:
    """How many times the thread (native id) went to sleep and was woken, from /proc."""
    status = Path(f"/proc/self/task/{thread_id}/status").read_text()
    return next(
        int(line.split()[1])
        for line in status.splitlines()
        if line.startswith("voluntary_ctxt_switches")
    )


@dataclass
class Running:
    listener: Listener
    stop: threading.Event
    thread: threading.Thread
    ready: list[str]
    native: list[int]

    def listening(self) -> None:
        """Until the listener's LISTEN took hold (it says "claim now" once it has)."""
        wait_for(lambda: "" in self.ready, timeout=10, what="the listener listening")


@pytest.fixture
def running(db_url: str) -> Iterator[Running]:
    ready: list[str] = []
    native: list[int] = []
    stop = threading.Event()
    listener = Listener(
        db_url,
        on_ready=ready.append,
        on_cancel=lambda hints: None,
        stop=stop,
        retry_max_s=1.0,
    )

    def run() -> None:
        native.append(threading.get_native_id())
        listener.run()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield Running(listener, stop, thread, ready, native)
    finally:
        stop.set()
        listener.stop()
        thread.join(timeout=5)
    assert not thread.is_alive()


def announce(db_url: str, payload: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("SELECT pg_notify(%s, %s)", (JOBS_CHANNEL, payload))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_idle_listener_sleeps_until_something_arrives_and_still_hears_an_announcement(
    db_url: str, running: Running
) -> None:
    # psycopg's own wait for notifications woke every 0.1 s to look for signals, half an idle
    # worker's wakeups; then a wait of 0.5 s to see a stop woke it twice a second
    # (pipeline/listener.py). Now nothing but the socket or stop() wakes it.
    running.listening()
    time.sleep(0.2)  # past the LISTEN's round trip, into the idle wait
    before = wakeups(running.native[0])
    time.sleep(2)  # the absence of wake-ups: 4 in these two seconds before, 20 before that
    assert wakeups(running.native[0]) - before <= 1
    announce(db_url, "noop")
    wait_for(lambda: "noop" in running.ready, timeout=5, what="the announcement")


def test_stop_ends_an_idle_listener_at_once(running: Running) -> None:
    running.listening()
    time.sleep(0.2)  # into the idle wait, which has no timeout
    started = time.monotonic()
    running.stop.set()
    running.listener.stop()
    running.thread.join(timeout=5)
    assert not running.thread.is_alive()
    assert time.monotonic() - started < 1.0


def test_a_dropped_connection_is_seen_in_the_idle_wait_and_listening_resumes(
    db_url: str, conn: psycopg.Connection[tuple[object, ...]], running: Running
) -> None:
    running.listening()
    listening = (
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = 'pg-pipeline listener' AND state = 'idle'"
    )
    [(pid,)] = wait_for(lambda: conn.execute(listening).fetchall(), what="the listener idle")
    assert conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
    # Polled once when the connection is lost, once more when LISTEN holds again.
    wait_for(lambda: running.ready.count("") >= 3, timeout=10, what="the listener back")
    wait_for(
        lambda: [p for (p,) in conn.execute(listening).fetchall() if p != pid],
        what="a new listening session",
    )
    announce(db_url, "after")
    wait_for(lambda: "after" in running.ready, timeout=5, what="the announcement after")
