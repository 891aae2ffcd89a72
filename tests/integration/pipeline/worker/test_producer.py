"""The Producer on its own against a real database: it claims for its free slots only, hands
each job to its executor once, and naps until a slot frees, a job is announced or a settlement
may have freed a tenant's slot."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import REGISTRY, Context, JobRequest, enqueue, enqueue_many
from pg_pipeline.store import ClaimedJob, JobStore
from pg_pipeline.worker import producer as producer_module
from pg_pipeline.worker.completer import Settled
from pg_pipeline.worker.inflight import InFlight, InFlightTable
from pg_pipeline.worker.prefetch import Prefetch
from pg_pipeline.worker.producer import FIRST_DEAF_S, ClaimPlan, Producer
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
#: long enough that anything the tests see within their waits was woken, not polled
NEVER_POLL_S = 600.0


class Holding:
    """An executor that holds every job it is given in the table, as running."""

    def __init__(self, table: InFlightTable) -> None:
        self.table = table
        self.jobs: list[ClaimedJob] = []

    def dispatch_all(self, jobs: list[ClaimedJob]) -> None:
        for job in jobs:
            self.jobs.append(job)
            ctx = Context.for_job(job, REGISTRY, None)
            entry = InFlight(job, REGISTRY.get(job.type), ctx, False)
            self.table.add(entry)
            self.table.start(entry)

    def finish(self, job: ClaimedJob) -> None:
        entry = self.table.get(job.id)
        assert entry is not None
        self.table.finish_run(entry)


class Counting:
    def __init__(self) -> None:
        self.claims: list[int] = []

    def claimed(self, count: int, seconds: float) -> None:
        self.claims.append(count)


class Running:
    def __init__(
        self,
        pool: ConnectionPool,
        slots: int,
        settling_max: int = 1000,
        held_back_warn_s: float = 5.0,
        batch_max: int = 100,
        **caps: int,
    ) -> None:
        self.table = InFlightTable(slots, threading.Event())
        self.executor = Holding(self.table)
        self.metrics = Counting()
        plan = ClaimPlan(
            uuid.uuid4(),
            ("effect", "noop"),
            {"effect": None, "noop": caps.get("noop")},
            batch_max=batch_max,
            poll_interval_s=NEVER_POLL_S,
            retry_max_s=1.0,
            settling_max=settling_max,
            held_back_warn_s=held_back_warn_s,
        )
        self.producer = Producer(
            JobStore(pool), plan, self.table, self.executor, Prefetch(slots, 0, 0), self.metrics
        )
        self.thread = threading.Thread(target=self.producer.run, daemon=True)


@pytest.fixture
def running(pool: ConnectionPool) -> Iterator[Any]:
    started: list[Running] = []

    def start(
        slots: int,
        settling_max: int = 1000,
        held_back_warn_s: float = 5.0,
        batch_max: int = 100,
        **caps: int,
    ) -> Running:
        r = Running(pool, slots, settling_max, held_back_warn_s, batch_max, **caps)
        r.thread.start()
        started.append(r)
        return r

    yield start
    for r in started:
        r.producer.stop()
        r.thread.join(timeout=5)
        assert not r.thread.is_alive(), "the producer did not stop"


def test_the_producer_claims_for_its_free_slots_only_and_again_when_one_frees(
    conn: Conn, running: Any
) -> None:
    enqueue_many(conn, [JobRequest("noop", {"n": i}) for i in range(5)])
    r = running(3)
    wait_for(lambda: len(r.executor.jobs) == 3, what="three jobs claimed")
    assert r.metrics.claims[0] == 3
    r.executor.finish(r.executor.jobs[0])
    wait_for(lambda: len(r.executor.jobs) == 4, what="a job claimed for the freed slot")
    assert len({j.id for j in r.executor.jobs}) == 4, "a job was handed over twice"


def test_an_announced_job_of_its_type_wakes_the_producer_before_its_poll(
    conn: Conn, running: Any
) -> None:
    r = running(2)
    wait_for(lambda: r.metrics.claims == [0], what="the first, empty claim")
    enqueue(conn, "noop", {})
    r.producer.announced("noop")
    wait_for(lambda: len(r.executor.jobs) == 1, timeout=10, what="the announced job")


def test_a_tenants_settlement_wakes_a_producer_whose_last_claim_came_back_short(
    conn: Conn, running: Any
) -> None:
    """It may have freed the tenant's slot under its cap."""
    r = running(2)
    wait_for(lambda: r.metrics.claims == [0], what="the first, empty claim")
    assert r.producer.short
    job_id = enqueue(conn, "noop", {})
    settled_elsewhere = ClaimedJob(job_id + 1, "noop", "t1", {}, 0, 1, 3, 30, None, 1)
    r.producer.settled(settled_elsewhere, Settled.DONE)
    wait_for(lambda: len(r.executor.jobs) == 1, timeout=10, what="the job claimed")


def test_after_a_claim_that_found_nothing_freed_slots_claim_nothing_until_news_of_work(
    conn: Conn, running: Any
) -> None:
    """At a drain's end every runner that finished freed a slot, and every worker claimed
    again for it and found nothing: a claim a slot, each walking the head of the queue."""
    enqueue_many(conn, [JobRequest("noop", {"n": i}) for i in range(3)])
    r = running(4)
    wait_for(lambda: len(r.executor.jobs) == 3, what="three jobs claimed")
    first, second, third = r.executor.jobs
    r.executor.finish(first)
    wait_for(lambda: r.metrics.claims[-1:] == [0], what="a claim for the freed slot, empty")
    claims = len(r.metrics.claims)
    # Not announced (the test's producer has no listener): only the poll would find it.
    enqueue(conn, "noop", {"late": True})
    for job in (second, third):  # a freed slot and an untenanted settlement each
        r.executor.finish(job)
        r.table.settled(job, Settled.DONE)
        r.producer.settled(job, Settled.DONE)
        wait_for(lambda: not r.table.changed.is_set(), what="the producer to look and nap")
    assert len(r.metrics.claims) == claims and len(r.executor.jobs) == 3
    r.producer.announced("noop")
    wait_for(lambda: len(r.executor.jobs) == 4, timeout=10, what="the announced job claimed")


def test_a_full_batch_after_a_claim_that_found_nothing_ends_the_dry_spell(
    conn: Conn, running: Any
) -> None:
    """Two workers' claims: one comes back empty (the other took the jobs, or held a tenant's
    counter), then news wakes it and it takes a full batch. Its next claim must follow at once,
    as after any full batch with slots left, not wait for the poll the empty claim set."""
    r = running(5, batch_max=2)
    wait_for(lambda: r.metrics.claims == [0], what="the first, empty claim")
    enqueue_many(conn, [JobRequest("noop", {"n": i}) for i in range(5)])
    r.producer.announced("noop")
    wait_for(lambda: len(r.executor.jobs) == 5, timeout=10, what="all five jobs, in three claims")
    assert r.metrics.claims == [0, 2, 2, 1]


def test_a_producer_whose_claim_found_nothing_claims_again_at_its_poll(
    pool: ConnectionPool,
) -> None:
    table = InFlightTable(2, threading.Event())
    executor = Holding(table)
    metrics = Counting()
    plan = ClaimPlan(uuid.uuid4(), ("noop",), {"noop": None}, 100, 0.2, 1.0)
    producer = Producer(JobStore(pool), plan, table, executor, Prefetch(2, 0, 0), metrics)
    thread = threading.Thread(target=producer.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(metrics.claims) >= 2, timeout=10, what="a second, polled claim")
        assert metrics.claims[:2] == [0, 0]
    finally:
        producer.stop()
        thread.join(timeout=5)


def test_an_announcement_that_woke_a_claim_for_nothing_mutes_the_next_ones_for_a_while(
    conn: Conn, running: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Anyone may announce (NOTIFY takes no privilege): one that finds nothing, forged or
    # another worker's, mutes the next ones for a while (here made long), so a flood costs
    # few claims.
    monkeypatch.setattr(producer_module, "FIRST_DEAF_S", 60.0)
    r = running(2)
    wait_for(lambda: r.metrics.claims == [0], what="the first, empty claim")
    r.producer.announced("noop")
    wait_for(lambda: r.metrics.claims == [0, 0], what="the claim the announcement woke")
    wait_for(lambda: not r.table.changed.is_set(), what="the producer to nap")
    enqueue(conn, "noop", {})
    r.producer.announced("noop")
    assert not r.table.changed.is_set(), "a muted announcement woke the producer"
    # Whatever else wakes it still does: here a tenant's settlement after its short claim.
    settled_elsewhere = ClaimedJob(0, "noop", "t1", {}, 0, 1, 3, 30, None, 1)
    r.producer.settled(settled_elsewhere, Settled.DONE)
    wait_for(lambda: len(r.executor.jobs) == 1, timeout=10, what="the job claimed")
    # The mute is the stage's alone: jobs a rate limit holds back are announced as they come
    # and found by no claim, which must not mute the worker's other stages (served at its
    # poll interval only, else).
    assert time.monotonic() < r.producer.deaf_until["noop"]
    enqueue(conn, "effect", {})
    r.producer.announced("effect")
    wait_for(lambda: len(r.executor.jobs) == 2, timeout=10, what="the other stage's job")


def test_the_mute_doubles_with_each_claim_woken_for_nothing_and_ends_with_one_that_finds_work(
    conn: Conn, running: Any
) -> None:
    # A worker that lost one race for a job (another worker, or its own earlier claim, took
    # it) hears the next job a moment later; only a run of empty wake-ups, as a flood makes,
    # mutes it for long (up to the poll interval).
    r = running(2)
    wait_for(lambda: r.metrics.claims == [0], what="the first, empty claim")
    mutes = []
    for claims in range(2, 6):
        wait_for(
            lambda: time.monotonic() >= r.producer.deaf_until.get("noop", 0.0),
            what="the mute to end",
        )
        r.producer.announced("noop")
        wait_for(lambda: len(r.metrics.claims) == claims, what="the claim it woke")  # noqa: B023
        mutes.append(r.producer.deaf_s["noop"])
    assert mutes == [FIRST_DEAF_S * 2**n for n in range(4)]
    wait_for(
        lambda: time.monotonic() >= r.producer.deaf_until.get("noop", 0.0), what="the mute to end"
    )
    enqueue(conn, "noop", {})
    r.producer.announced("noop")
    wait_for(lambda: len(r.executor.jobs) == 1, timeout=10, what="the announced job")
    assert r.producer.deaf_s.get("noop", 0.0) == 0.0
    r.producer.announced("noop")  # heard at once: it wakes a claim, which finds nothing
    wait_for(lambda: len(r.metrics.claims) == 7, timeout=10, what="the claim it woke")
    assert r.producer.deaf_s["noop"] == FIRST_DEAF_S


def test_a_producer_that_lost_a_race_claims_the_next_job_announced_during_its_mute(
    conn: Conn, running: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every worker hears every announcement; the one that loses the race for the job is muted
    # for a while (here long). A job announced meanwhile is claimed when the mute ends, not
    # left to the poll: when every worker had lost its last race, nobody took it for a second.
    monkeypatch.setattr(producer_module, "FIRST_DEAF_S", 2.0)
    winner, loser = running(1), running(2)
    wait_for(lambda: winner.metrics.claims == [0], what="the winner's first, empty claim")
    wait_for(lambda: loser.metrics.claims == [0], what="the loser's first, empty claim")
    enqueue(conn, "noop", {})
    winner.producer.announced("noop")
    wait_for(lambda: len(winner.executor.jobs) == 1, what="the winner's claim")
    loser.producer.announced("noop")  # the same announcement, heard a moment later
    wait_for(lambda: loser.metrics.claims == [0, 0], what="the loser's claim, for nothing")
    assert time.monotonic() < loser.producer.deaf_until["noop"], "the race cost no mute"
    enqueue(conn, "noop", {})
    winner.producer.announced("noop")  # its one slot is taken: it does not claim
    loser.producer.announced("noop")
    assert not loser.table.changed.is_set(), "a muted announcement woke the producer"
    wait_for(lambda: len(loser.executor.jobs) == 1, timeout=10, what="the job, at the mute's end")
    assert loser.producer.deaf_s.get("noop", 0.0) == 0.0, "the claim found work: no run of mutes"


def test_a_job_announced_while_a_claim_takes_it_mutes_nothing(conn: Conn, running: Any) -> None:
    # A claim that a settlement started takes a job whose announcement arrives while it runs:
    # the claim that announcement wakes finds nothing, and must not count as woken for nothing
    # (with every worker so muted at once, the next job waited for the poll).
    r = running(2)
    wait_for(lambda: r.metrics.claims == [0], what="the first, empty claim")
    store_claim = r.producer.store.claim

    def claim_hearing_its_job(*args: Any, **kwargs: Any) -> list[ClaimedJob]:
        jobs: list[ClaimedJob] = store_claim(*args, **kwargs)
        if jobs:
            r.producer.announced("noop")  # the job's announcement, come during its claim
        return jobs

    r.producer.store.claim = claim_hearing_its_job
    enqueue(conn, "noop", {})
    settled_elsewhere = ClaimedJob(0, "noop", "t1", {}, 0, 1, 3, 30, None, 1)
    r.producer.settled(settled_elsewhere, Settled.DONE)  # its last claim was short
    wait_for(lambda: r.metrics.claims == [0, 1, 0], timeout=10, what="the announcement's claim")
    assert "noop" not in r.producer.deaf_s
    assert time.monotonic() >= r.producer.deaf_until.get("noop", 0.0), "muted by its own job"


@pytest.mark.parametrize("warn_after_s", [3600.0, 0.0])
def test_the_producer_claims_nothing_while_completions_wait_to_be_confirmed_in_numbers(
    conn: Conn, running: Any, caplog: pytest.LogCaptureFixture, warn_after_s: float
) -> None:
    """An acknowledgement that cannot get through (a lock, a slow database) must not let the
    worker claim on: each job claimed would wait behind it, its lease with theirs. A hold-back
    is warned of once it has lasted `held_back_warn_s`: a fast drain's, of moments, is not."""
    caplog.set_level(logging.INFO, logger="pg_pipeline.worker.producer")
    enqueue_many(conn, [JobRequest("noop", {"n": i}) for i in range(10)])
    r = running(2, settling_max=3, held_back_warn_s=warn_after_s)
    wait_for(lambda: len(r.executor.jobs) == 2, what="two jobs claimed")
    # Each finished run frees its slot, but its completion is not confirmed yet.
    r.executor.finish(r.executor.jobs[0])
    wait_for(lambda: len(r.executor.jobs) == 3, what="a job claimed for the freed slot")
    r.executor.finish(r.executor.jobs[1])
    wait_for(lambda: len(r.executor.jobs) == 4, what="another job claimed")
    r.executor.finish(r.executor.jobs[2])
    wait_for(lambda: r.producer.held_back, what="claiming to stop")
    claims = len(r.metrics.claims)
    r.producer.announced("noop")  # wakes it: it looks, and still claims nothing
    wait_for(lambda: not r.table.changed.is_set(), what="the producer to look and nap")
    assert len(r.executor.jobs) == 4 and len(r.metrics.claims) == claims
    assert r.table.free() == 1, "a slot is free all along"
    # One completion confirmed: the producer claims again at once.
    first = r.executor.jobs[0]
    r.table.settled(first, Settled.DONE)
    r.producer.settled(first, Settled.DONE)
    wait_for(lambda: len(r.executor.jobs) == 5, timeout=10, what="claiming to resume")
    assert not r.producer.held_back
    said = [(rec.levelno, rec.getMessage()) for rec in caplog.records]
    if warn_after_s:
        assert said == []
    else:
        assert said == [
            (
                logging.WARNING,
                "3 completions have waited 0 s to be confirmed: claiming no more until they are",
            ),
            (logging.INFO, "completions confirmed: claiming again"),
        ]
