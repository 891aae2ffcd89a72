"""Rate limits in units per key (docs/limits.md): admission in the claim, exact under concurrent
claimers, refused jobs left as they were, runtime capacities, corrections, enqueue by name."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import defaultdict
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.limits_app  # noqa: F401  registers the test stages
from pg_pipeline import JobRequest, Limit, enqueue, enqueue_many
from pg_pipeline.admin.limits import clear_limit, limit_rows, set_limit
from pg_pipeline.db import make_pool
from pg_pipeline.stage import REGISTRY
from pg_pipeline.store import ClaimedJob, JobStore
from pg_pipeline.validation import InvalidJob
from tests.support.apps.limits_app import CALLS, UNITS

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=7)


def claim(
    store: JobStore, limit: int = 50, types: tuple[str, ...] = ("limited",)
) -> list[ClaimedJob]:
    return store.claim(list(types), limit, WORKER)


def row(conn: Conn, job_id: int) -> tuple[str, int, int, bool]:
    found = conn.execute(
        "SELECT status, attempts, claims, holds_slot FROM pipeline.active_jobs WHERE id = %s",
        (job_id,),
    ).fetchone()
    assert found is not None
    return found


def test_a_job_is_charged_at_enqueue_from_its_payload(conn: Conn) -> None:
    job_id = enqueue(conn, "limited", {"key": "api-1", "units": 7})
    (limits,) = conn.execute(
        "SELECT limits FROM pipeline.active_jobs WHERE id = %s", (job_id,)
    ).fetchone() or (None,)
    assert limits == [{"name": UNITS, "key": "api-1", "units": 7}]
    plain = enqueue(conn, "limited_in_code", {"units": 4}, tenant_id="acme")
    (limits,) = conn.execute(
        "SELECT limits FROM pipeline.active_jobs WHERE id = %s", (plain,)
    ).fetchone() or (None,)
    assert limits == [{"name": UNITS, "key": "acme", "units": 8}]


def test_a_refused_job_stays_queued_without_an_attempt_or_a_slot(
    conn: Conn, pool: ConnectionPool
) -> None:
    set_limit(conn, UNITS, 10, per=60)
    store = JobStore(pool)
    first = enqueue(conn, "limited", {"units": 6})
    second = enqueue(conn, "limited", {"units": 6})
    other_key = enqueue(conn, "limited", {"units": 6, "key": "other"})
    got = claim(store)
    assert [j.id for j in got] == [first, other_key]
    assert row(conn, second) == ("queued", 0, 0, False)
    # Still refused: the window holds 6 of 10.
    assert claim(store) == []
    assert row(conn, second) == ("queued", 0, 0, False)
    rows = {(r.name, r.key): r for r in limit_rows(conn)}
    assert rows[(UNITS, "k")].used == 6 and rows[(UNITS, "k")].waiting == 1
    assert rows[(UNITS, "other")].used == 6 and rows[(UNITS, "other")].capacity == 10


def test_a_new_capacity_applies_at_the_next_claim(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    set_limit(conn, UNITS, 1, per=60)
    ids = enqueue_many(conn, [JobRequest("limited", {"n": i}) for i in range(5)])
    assert [j.id for j in claim(store)] == ids[:1]
    assert claim(store) == []
    set_limit(conn, UNITS, 3, per=60)
    assert [j.id for j in claim(store)] == ids[1:3]
    set_limit(conn, UNITS, 2, per=60, key="k")  # a key's own capacity wins over '*'
    assert claim(store) == []
    assert clear_limit(conn, UNITS, key="k") == ["k"]
    assert claim(store) == []  # '*' again: 3 of 3 used
    clear_limit(conn, UNITS)
    assert [j.id for j in claim(store)] == ids[3:], "without a capacity nothing is held back"


def test_a_limit_without_a_capacity_holds_nothing_back(conn: Conn, pool: ConnectionPool) -> None:
    enqueue_many(conn, [JobRequest("limited", {"units": 1000}) for _ in range(3)])
    assert len(claim(JobStore(pool))) == 3


def test_a_job_is_admitted_whole_or_not_at_all(conn: Conn, pool: ConnectionPool) -> None:
    """limited_calls is charged to two limits: one call of five a minute (a code default,
    recorded by a worker starting) and its units against a shared key."""
    store = JobStore(pool)
    store.record_limit_defaults([REGISTRY.get("limited_calls")])
    set_limit(conn, UNITS, 10, per=60)
    ids = enqueue_many(conn, [JobRequest("limited_calls", {"units": 4}) for _ in range(7)])
    got = claim(store, types=("limited_calls",))
    # Units allow two (8 of 10), calls five: two, and no call is charged for the third.
    assert [j.id for j in got] == ids[:2]
    rows = {(r.name, r.key): r for r in limit_rows(conn)}
    assert rows[(CALLS, "*")].used == 2 and rows[(CALLS, "*")].source == "code"
    assert rows[(UNITS, "shared")].used == 8
    # An operator's capacity wins over the code's, and a worker starting again keeps it.
    set_limit(conn, CALLS, 2, per=60)
    store.record_limit_defaults([REGISTRY.get("limited_calls")])
    set_limit(conn, UNITS, 100, per=60)
    assert claim(store, types=("limited_calls",)) == []


def test_a_correction_moves_the_charge_to_what_was_used(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    set_limit(conn, UNITS, 10, per=60)
    enqueue_many(conn, [JobRequest("limited", {"units": 5, "n": i}) for i in range(3)])
    (first, second) = claim(store)
    store.correct_limits(first, {UNITS: 0})  # used less: 5 units back
    assert [r.used for r in limit_rows(conn) if r.key == "k"] == [5]
    (third,) = claim(store)
    store.correct_limits(third, {UNITS: 30})  # used more: the window is past its capacity
    assert [r.used for r in limit_rows(conn) if r.key == "k"] == [35]
    enqueue(conn, "limited", {"units": 1})
    assert claim(store) == []
    # A stale claim corrects nothing.
    store.complete([second.fence])
    store.correct_limits(second, {UNITS: 0})
    assert [r.used for r in limit_rows(conn) if r.key == "k"] == [35]


def test_a_window_lets_more_in_once_its_charges_are_older_than_per(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    set_limit(conn, UNITS, 2, per=2)
    ids = enqueue_many(conn, [JobRequest("limited", {"n": i}) for i in range(4)])
    assert [j.id for j in claim(store)] == ids[:2]
    wait = store.limit_wait([UNITS])
    assert wait is not None and 0 <= wait <= 2.0
    deadline = time.monotonic() + 5
    got: list[ClaimedJob] = []
    while not got and time.monotonic() < deadline:
        got = claim(store)
    assert [j.id for j in got] == ids[2:]
    assert store.limit_wait(["another limit"]) is None


def test_enqueue_by_name_is_charged_from_the_recorded_limits(db_url: str, conn: Conn) -> None:
    from pg_pipeline.recorded_stages import record_stages
    from pg_pipeline.stage import Registry

    record_stages(conn, [REGISTRY.get("limited"), REGISTRY.get("limited_in_code")], WORKER, "h")
    nothing = Registry()  # a process without the stages' code
    job_id = enqueue(conn, "limited", {"key": "by-name", "units": 3}, registry=nothing)
    (limits,) = conn.execute(
        "SELECT limits FROM pipeline.active_jobs WHERE id = %s", (job_id,)
    ).fetchone() or (None,)
    assert limits == [{"name": UNITS, "key": "by-name", "units": 3}]
    # A field the payload leaves out has its model's default, as from code (the key "k").
    job_id = enqueue(conn, "limited", {"units": 2}, registry=nothing)
    (limits,) = conn.execute(
        "SELECT limits FROM pipeline.active_jobs WHERE id = %s", (job_id,)
    ).fetchone() or (None,)
    assert limits == [{"name": UNITS, "key": "k", "units": 2}]
    with pytest.raises(InvalidJob, match="computes its units in code"):
        enqueue(conn, "limited_in_code", {"units": 3}, tenant_id="t", registry=nothing)


def test_eight_claimers_at_once_never_exceed_a_window(db_url: str, conn: Conn) -> None:
    """Sliding windows of 2 s: in every 2 consecutive seconds, the units charged to each key
    stay within its capacity, whichever of 8 claimers took them; a key's own capacity and the
    '*' default both bind."""
    per, capacity = 2, 40
    set_limit(conn, UNITS, capacity, per=per)
    set_limit(conn, UNITS, 15, per=per, key="small")
    keys = ["a", "b", "small"]
    rng = random.Random(24)
    enqueue_many(
        conn,
        [
            JobRequest(
                "limited",
                {"n": i, "key": keys[i % 3], "units": rng.randint(1, 6)},
                tenant_id=f"t{i % 4}",
            )
            for i in range(900)
        ],
    )
    stop = threading.Event()
    claimed: list[tuple[str, int, int]] = []  # (key, second charged, units)
    lock = threading.Lock()

    def claimer(seed: int, pool: ConnectionPool) -> None:
        local = random.Random(seed)
        store = JobStore(pool)
        me = uuid.UUID(int=100 + seed)
        while not stop.is_set():
            jobs = store.claim(["limited"], local.randint(1, 8), me)
            if jobs:
                with pool.connection() as c:
                    rows = c.execute(
                        "SELECT payload ->> 'key', floor(extract(epoch FROM started_at))::bigint,"
                        " (payload ->> 'units')::int FROM pipeline.active_jobs"
                        " WHERE id = ANY(%s)",
                        ([j.id for j in jobs],),
                    ).fetchall()
                with lock:
                    claimed.extend(rows)
                store.complete([j.fence for j in jobs])

    pools = [make_pool(db_url, max_size=2, name=f"claimer {i}") for i in range(8)]
    threads = [threading.Thread(target=claimer, args=(i, pools[i])) for i in range(8)]
    try:
        for thread in threads:
            thread.start()
        time.sleep(4 * per + 0.5)  # the duration under test: several windows
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        for pool in pools:
            pool.close()
    assert not any(t.is_alive() for t in threads)
    by_key: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for key, second, units in claimed:
        by_key[key][second] += units
    caps = {"a": capacity, "b": capacity, "small": 15}
    for key, seconds in by_key.items():
        windows = [
            sum(seconds.get(s, 0) for s in range(start, start + per))
            for start in range(min(seconds) - per + 1, max(seconds) + 1)
        ]
        assert max(windows) <= caps[key], (key, dict(seconds))
        # The limit bound: a key's busiest window is full, or close to it (a job that did
        # not fit leaves at most its units unused).
        assert max(windows) > caps[key] - 6, (key, dict(seconds))
    assert len(by_key) == 3, "a key was never claimed"
    print(f"windows: {dict((k, dict(v)) for k, v in by_key.items())}")


def test_a_fan_outs_then_job_is_charged_when_the_join_enqueues_it(db_url: str, conn: Conn) -> None:
    from pg_pipeline import WorkerSettings
    from tests.integration.workers import running_worker

    set_limit(conn, UNITS, 0, per=60, key="then")  # 0 pauses the key: the then job waits
    enqueue(conn, "limited_fan", {})
    with running_worker(db_url, ["limited_fan", "limited"], WorkerSettings(concurrency=2)):
        deadline = time.monotonic() + 15
        while not limit_rows_waiting(conn):
            assert time.monotonic() < deadline, "the join never enqueued its then job"
            time.sleep(0.05)
    (limits,) = conn.execute(
        "SELECT limits FROM pipeline.active_jobs WHERE status = 'queued'"
    ).fetchone() or (None,)
    assert limits == [{"name": UNITS, "key": "then", "units": 2}]


def limit_rows_waiting(conn: Conn) -> bool:
    return any(r.key == "then" and r.waiting == 1 for r in limit_rows(conn))


def test_status_and_metrics_show_what_the_windows_hold_and_the_jobs_they_hold_back(
    conn: Conn, pool: ConnectionPool
) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from pg_pipeline.admin.metrics import QueueCollector
    from pg_pipeline.admin.status import read_status
    from pg_pipeline.commands.status import render

    set_limit(conn, UNITS, 4, per=60)
    enqueue_many(conn, [JobRequest("limited", {"units": 2}) for _ in range(3)])
    assert len(claim(JobStore(pool))) == 2
    status = read_status(conn)
    (row,) = [r for r in status.limits if r.key == "k"]
    assert (row.used, row.capacity, row.waiting, row.full) == (4, 4, 1, True)
    assert [r["full"] for r in status.to_json()["limits"] if r["key"] == "k"] == [True]
    line = next(x for x in render(status).splitlines() if "4/4 per 60 s" in x)
    assert line.split() == [UNITS, "k", "4/4", "per", "60", "s", "1", "full"]
    assert read_status(conn, tenant="acme").limits == []

    registry = CollectorRegistry()
    registry.register(QueueCollector(pool))
    text = generate_latest(registry).decode()
    assert f'pipeline_rate_limit_used{{key="k",limit="{UNITS}"}} 4.0' in text
    assert f'pipeline_rate_limit_capacity{{key="k",limit="{UNITS}"}} 4.0' in text
    assert f'pipeline_rate_limit_waiting{{key="k",limit="{UNITS}"}} 1.0' in text


def test_a_blocked_key_holds_back_its_own_jobs_not_those_behind_them(
    conn: Conn, pool: ConnectionPool
) -> None:
    """One (stage, tenant) group: ten jobs of a key with room for one, then five of another
    key. The claim admits one of the first key's and looks past the rest."""
    store = JobStore(pool)
    set_limit(conn, UNITS, 100, per=60)
    set_limit(conn, UNITS, 1, per=60, key="busy")
    busy = enqueue_many(
        conn, [JobRequest("limited", {"key": "busy"}, tenant_id="t") for _ in range(10)]
    )
    free = enqueue_many(
        conn, [JobRequest("limited", {"key": "free"}, tenant_id="t") for _ in range(5)]
    )
    got = [j.id for j in claim(store, limit=6)]
    assert got == [busy[0], *free]
    assert all(row(conn, i) == ("queued", 0, 0, False) for i in busy[1:])
    assert claim(store) == []


def test_units_too_large_to_count_are_refused_at_enqueue(conn: Conn, pool: ConnectionPool) -> None:
    """A charge the window's counts cannot hold must not reach the queue: there it failed every
    claim of the stage (and stopped the worker), `limits list`, status and the metrics."""
    from pg_pipeline.admin.status import read_status
    from pg_pipeline.recorded_stages import record_stages
    from pg_pipeline.stage import Registry

    with pytest.raises(InvalidJob, match="units must be at most"):
        enqueue(conn, "limited", {"units": 10**20})
    record_stages(conn, [REGISTRY.get("limited")], WORKER, "h")
    with pytest.raises(InvalidJob, match="units must be at most"):
        enqueue(conn, "limited", {"key": "k", "units": 10**20}, registry=Registry())
    with pytest.raises(ValueError, match="at most 1000000000000000"):
        Limit("x", units=10**20)
    job_id = enqueue(conn, "limited", {"units": 3})
    assert [j.id for j in claim(JobStore(pool))] == [job_id]
    set_limit(conn, UNITS, 10**18, per=60)
    enqueue(conn, "limited", {"units": 10**15})
    enqueue(conn, "limited", {"units": 10**15})
    assert [r.waiting_units for r in limit_rows(conn) if r.key == "k"] == [2 * 10**15]
    assert "k" in [r.key for r in read_status(conn).limits]


def test_a_refused_job_of_a_capped_stage_takes_no_tenant_slot(
    conn: Conn, pool: ConnectionPool
) -> None:
    from tests.support.slots import held_slots

    store = JobStore(pool)
    set_limit(conn, UNITS, 2, per=60)
    ids = enqueue_many(
        conn, [JobRequest("limited_capped", {"units": 1}, tenant_id="acme") for _ in range(4)]
    )
    got = store.claim(["limited_capped"], 10, WORKER, {"limited_capped": 5})
    assert [j.id for j in got] == ids[:2]
    # Two slots of five: the two jobs the limit left queued hold none.
    assert held_slots(conn)[("acme", "limited_capped")] == 2
    assert [row(conn, i) for i in ids[2:]] == [("queued", 0, 0, False)] * 2
    store.complete([j.fence for j in got])
    assert held_slots(conn)[("acme", "limited_capped")] == 0


def test_a_capacity_of_0_pauses_the_key_even_for_jobs_charged_nothing(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    set_limit(conn, UNITS, 0, per=60, key="paused")
    held = enqueue(conn, "limited", {"key": "paused", "units": 0})
    free = enqueue(conn, "limited", {"key": "other", "units": 0})
    assert [j.id for j in claim(store)] == [free]
    assert row(conn, held) == ("queued", 0, 0, False)
    set_limit(conn, UNITS, 1, per=60, key="paused")
    assert [j.id for j in claim(store)] == [held]
