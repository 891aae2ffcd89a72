"""The listener against a real server: it hears announcements, and sleeps while none come."""

from __future__ import annotations

import sys
import threading
import time
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_idle_listener_sleeps_through_each_wait_and_still_hears_an_announcement(
    db_url: str,
) -> None:
    # psycopg's own wait for notifications woke every 0.1 s to look for signals: half an idle
    # worker's wakeups, and 1.6 of its 4 ms of CPU a second (pipeline/listener.py).
    ready: list[str] = []
    stop = threading.Event()
    native: list[int] = []
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
        wait_for(lambda: "" in ready, timeout=10, what="the listener listening")
        time.sleep(0.2)  # past the LISTEN's round trip, into the idle wait
        before = wakeups(native[0])
        time.sleep(2)
        # One sleep a wait of 0.5 s: 4 in two seconds (20 before).
        assert wakeups(native[0]) - before <= 8
        with psycopg.connect(db_url, autocommit=True) as conn:
            conn.execute("SELECT pg_notify(%s, 'noop')", (JOBS_CHANNEL,))
        wait_for(lambda: "noop" in ready, timeout=5, what="the announcement")
    finally:
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive()
