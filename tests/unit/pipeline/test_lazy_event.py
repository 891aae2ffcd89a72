"""LazyEvent: a threading.Event's behaviour, without one until someone waits."""

from __future__ import annotations

import threading

from pg_pipeline.lazy_event import LazyEvent


def test_a_flag_set_before_anyone_waits_is_seen_by_is_set_and_wait() -> None:
    flag = LazyEvent()
    assert not flag.is_set()
    assert flag.wait(0) is False
    flag.set()
    assert flag.is_set()
    assert flag.wait(0) is True
    assert flag.wait() is True  # no timeout: returns at once since it is set


def test_a_set_from_another_thread_wakes_a_waiter() -> None:
    flag = LazyEvent()
    waiting = threading.Event()
    woke: list[bool] = []

    def wait() -> None:
        waiting.set()
        woke.append(flag.wait(30))

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert waiting.wait(5)
    flag.set()
    waiter.join(5)
    assert woke == [True]


def _race_one_set(waiters: int) -> list[bool]:
    flag = LazyEvent()
    start = threading.Barrier(waiters + 1)
    results: list[bool] = []

    def wait() -> None:
        start.wait()
        results.append(flag.wait(10))

    threads = [threading.Thread(target=wait) for _ in range(waiters)]
    for t in threads:
        t.start()
    start.wait()
    flag.set()
    for t in threads:
        t.join(15)
    return results


def test_many_waiters_racing_one_set_all_wake() -> None:
    # Waiters arrive before, during and after the set: none may miss it (a missed set would
    # hang that waiter for the whole timeout and return False).
    for _ in range(50):
        assert _race_one_set(4) == [True] * 4
