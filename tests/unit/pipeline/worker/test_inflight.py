"""The in-flight table: slots, deadlines, which claim an entry belongs to."""

from __future__ import annotations

import threading
from dataclasses import replace

from pg_pipeline.worker.inflight import InFlightTable
from tests.unit.pipeline.worker.jobs import REG, entry


def test_a_slot_is_freed_once_whoever_settles_first() -> None:
    table = InFlightTable(1, threading.Event())
    e = entry(7)
    table.add(e)
    assert table.free() == 0
    assert table.overdue() == []  # no deadline
    assert table.abandon(e) is True
    assert table.finish_run(e) is False  # the late result is dropped
    assert table.abandon(e) is False
    assert table.free() == 1


def test_only_started_jobs_with_a_timeout_become_overdue_and_only_once() -> None:
    changed = threading.Event()
    table = InFlightTable(4, changed)
    late, done, parked, untimed = (entry(i) for i in (1, 2, 3, 4))
    for e in (late, done, parked):
        e.spec = replace(REG.get("counted"), timeout_s=5.0)
    untimed.spec = replace(REG.get("counted"), timeout_s=None)
    for e in (late, done, parked, untimed):
        table.add(e)
    for e in (late, done, untimed):
        assert table.start(e, now=100.0)
    assert table.finish_run(done)
    assert table.next_deadline() == 105.0
    assert table.overdue(now=104.9) == []
    assert table.overdue(now=105.0) == [late]  # not the finished, parked or untimed ones
    assert table.overdue(now=200.0) == []  # abandoned once; never again
    assert table.next_deadline() is None
    # A job taken from its parking place later counts its timeout from then.
    assert table.start(parked, now=300.0) and table.next_deadline() == 305.0
    table.forget(parked)
    assert table.next_deadline() is None and table.overdue(now=999.0) == []


def test_a_settled_claim_forgets_its_own_entry_and_not_a_newer_claim_of_the_job() -> None:
    table = InFlightTable(2, threading.Event())
    first = entry(9)
    table.add(first)
    table.forget_claim(first.job._replace(claim=2))  # another claim's settling: kept
    assert table.get(9) is first
    table.forget_claim(first.job)
    assert table.get(9) is None


def test_freeing_a_slot_wakes_the_claim_loop_even_after_it_cleared_the_flag() -> None:
    changed = threading.Event()
    table = InFlightTable(2, changed)
    a, b = entry(1), entry(2)
    for e in (a, b):
        table.add(e)
        table.start(e)
    assert table.finish_run(a) and changed.is_set()
    changed.clear()  # the claim loop read the table
    assert table.finish_run(b) and changed.is_set()


def test_only_a_deadline_sooner_than_the_watched_one_wakes_the_timeouts_thread() -> None:
    table = InFlightTable(4, threading.Event())
    first, later, sooner = (entry(i) for i in (1, 2, 3))
    for e, timeout in ((first, 5.0), (later, 5.0), (sooner, 1.0)):
        e.spec = replace(REG.get("counted"), timeout_s=timeout)
        table.add(e)
    assert table.start(first, now=100.0) and table.sooner_deadline.is_set(), "nothing watched"
    table.sooner_deadline.clear()
    assert table.next_deadline() == 105.0  # the thread now sleeps until then
    assert table.start(later, now=101.0) and not table.sooner_deadline.is_set()
    assert table.start(sooner, now=102.0) and table.sooner_deadline.is_set()
    assert table.next_deadline() == 103.0


def test_with_nothing_running_the_shortest_timeout_from_now_is_watched() -> None:
    # No job starting after a lull can have a deadline sooner than now plus the shortest
    # timeout: such starts need not wake the timeouts thread, which wakes then anyway.
    table = InFlightTable(4, threading.Event(), min_timeout_s=5.0)
    assert table.next_deadline(now=100.0) == 105.0
    first, sooner = entry(1), entry(2)
    first.spec = replace(REG.get("counted"), timeout_s=5.0)
    sooner.spec = replace(REG.get("counted"), timeout_s=0.5)  # shorter than the table knows
    for e in (first, sooner):
        table.add(e)
    assert table.start(first, now=100.0) and not table.sooner_deadline.is_set()
    assert table.next_deadline(now=101.0) == 105.0  # the running job's own deadline
    assert table.start(sooner, now=101.0) and table.sooner_deadline.is_set()
