"""Per-tenant caps, exact under concurrent claimers, with no slot leaks; fair claiming."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import JobRequest, enqueue, enqueue_many
from pg_pipeline.admin.tenants import set_cap
from pg_pipeline.maintenance import Reclaimer, SlotRepair
from pg_pipeline.queries import Q
from pg_pipeline.store import ClaimedJob, JobStore
from tests.support.claimers import claim_in_open_transaction, run_claimers
from tests.support.history import finish
from tests.support.slots import held_slots
from tests.support.waiting import lock_waiters, wait_for

Conn = psycopg.Connection[Any]
CAPS = {"capped": 3}
WORKER = uuid.UUID(int=5)


def slots(conn: Conn) -> dict[str, int]:
    return {tenant: n for (tenant, stage), n in held_slots(conn).items() if stage == "capped"}


def running_by_tenant(conn: Conn, stage: str = "capped") -> Counter[str]:
    rows = conn.execute(
        "SELECT tenant_id, count(*) FROM pipeline.jobs WHERE status = 'running' AND type = %s "
        "AND tenant_id IS NOT NULL GROUP BY 1",
        (stage,),
    ).fetchall()
    return Counter(dict(rows))


@pytest.mark.parametrize("turns", [1, 0], ids=["claims-take-turns", "turns-off"])
def test_eight_claimers_at_once_never_exceed_a_tenants_cap(
    db_url: str, conn: Conn, turns: int
) -> None:
    # Turns off, claims deal at once and their first passes wait for each other's counters
    # (sql/functions/lock_slots.sql): in key order, so no claim may end in a deadlock.
    conn.execute(f'ALTER DATABASE "{conn.info.dbname}" SET pg_pipeline.claim_turns = {turns}')
    tenants = [f"t{i}" for i in range(5)]
    enqueue_many(
        conn,
        [JobRequest("capped", {"n": i}, tenant_id=tenants[i % 5]) for i in range(3000)]
        + [JobRequest("capped", {"n": i}) for i in range(200)],  # no tenant: never capped
    )
    stop = threading.Event()
    peak: Counter[str] = Counter()
    samples = [0]

    def sample() -> None:
        with psycopg.connect(db_url, autocommit=True) as watcher:
            while not stop.is_set():
                for tenant, n in running_by_tenant(watcher).items():
                    peak[tenant] = max(peak[tenant], n)
                samples[0] += 1

    errors: list[BaseException] = []

    def claimer(seed: int, pool: ConnectionPool) -> None:
        try:
            claim_and_settle(seed, pool)
        except BaseException as exc:  # a thread's error is otherwise lost
            errors.append(exc)
            raise

    def claim_and_settle(seed: int, pool: ConnectionPool) -> None:
        rng = random.Random(seed)
        store = JobStore(pool)
        me = uuid.UUID(int=100 + seed)
        idle = 0
        while idle < 20:
            jobs = store.claim(["capped"], rng.randint(1, 6), me, CAPS)
            if not jobs:
                idle += 1
                time.sleep(0.005)
                continue
            idle = 0
            time.sleep(rng.uniform(0, 0.003))  # hold the slots a moment, as a run does
            for job in jobs:
                settle = rng.random()
                if settle < 0.7:
                    store.complete([job.fence])
                elif settle < 0.8:
                    store.retry_later(job, "try again", 0)
                elif settle < 0.9:
                    store.release([job.fence])
                else:
                    store.fail(job, "for good")

    watcher = threading.Thread(target=sample)
    watcher.start()
    try:
        run_claimers(db_url, 8, claimer)
    finally:
        stop.set()
        watcher.join(timeout=30)
    assert errors == []
    left = dict(conn.execute("SELECT status, count(*) FROM pipeline.jobs GROUP BY 1").fetchall())
    assert set(left) <= {"done", "failed"}, left
    assert samples[0] > 50, "the sampler barely ran"
    assert max(peak.values()) == 3, f"caps never reached, nothing was tested: {peak}"
    assert all(n <= 3 for n in peak.values()), peak
    # Every way out of running gave its slot back, exactly once.
    assert set(slots(conn).values()) == {0}
    print(f"cap sampler: {samples[0]} samples, peak running per tenant {dict(peak)}")


def claim(store: JobStore, limit: int = 10) -> list[ClaimedJob]:
    return store.claim(["capped"], limit, WORKER, CAPS)


@pytest.mark.parametrize("way_out", ["complete", "fail", "retry", "release", "reclaim", "cancel"])
def test_every_way_out_of_running_frees_the_slot_once(
    conn: Conn, pool: ConnectionPool, way_out: str
) -> None:
    store = JobStore(pool)
    enqueue_many(conn, [JobRequest("capped", {"n": i}, tenant_id="acme") for i in range(5)])
    held = claim(store)
    assert len(held) == 3 and slots(conn) == {"acme": 3}
    assert claim(store) == [], "a fourth job got past the cap"
    job = held[0]
    if way_out == "complete":
        store.complete([job.fence])
    elif way_out == "fail":
        store.fail(job, "bad")
    elif way_out == "retry":
        store.retry_later(job, "later", 60)
    elif way_out == "release":
        store.release([job.fence])
    elif way_out == "reclaim":
        conn.execute(
            "UPDATE pipeline.active_jobs SET leased_until = now() - interval '1 s' WHERE id = %s",
            (job.id,),
        )
        Reclaimer(pool).run_once()
    else:
        assert conn.execute(Q["cancel"], {"id": job.id, "reason": None}).fetchall()
    assert slots(conn) == {"acme": 2}
    # A stale write of the same claim changes nothing, and frees nothing again.
    store.complete([job.fence])
    store.fail(job, "again")
    assert slots(conn) == {"acme": 2}
    again = claim(store)
    assert len(again) == 1 and slots(conn) == {"acme": 3}
    assert running_by_tenant(conn) == {"acme": 3}


def test_deleting_a_running_job_frees_its_slot(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    enqueue(conn, "capped", {}, tenant_id="acme")
    [job] = claim(store)
    conn.execute("DELETE FROM pipeline.active_jobs WHERE id = %s", (job.id,))
    assert slots(conn) == {"acme": 0}


pairs = held_slots


def holding(conn: Conn) -> dict[tuple[str, str], int]:
    """Jobs holding a slot, by (tenant, stage): what every counter should say."""
    rows = conn.execute(
        "SELECT tenant_id, type, count(*) FROM pipeline.jobs WHERE holds_slot GROUP BY 1, 2"
    ).fetchall()
    return {(tenant, stage): n for tenant, stage, n in rows}


@pytest.mark.parametrize(
    ("change", "moved_to"),
    [
        ("tenant_id = 'beta'", ("beta", "capped")),
        ("type = 'noop'", ("acme", "noop")),
        ("tenant_id = 'beta', type = 'noop'", ("beta", "noop")),
        ("tenant_id = NULL", None),
        ("tenant_id = 'beta', status = 'queued'", None),
    ],
)
def test_changing_a_running_jobs_tenant_or_stage_moves_its_slot_with_it(
    conn: Conn, pool: ConnectionPool, change: str, moved_to: tuple[str, str] | None
) -> None:
    store = JobStore(pool)
    enqueue_many(conn, [JobRequest("capped", {"n": i}, tenant_id="acme") for i in range(3)])
    [job, *_] = claim(store)
    assert pairs(conn) == {("acme", "capped"): 3}
    conn.execute(
        f"UPDATE pipeline.active_jobs SET {change} WHERE id = %s", (job.id,)
    )  # an operator's hand
    expected = {("acme", "capped"): 2} | ({moved_to: 1} if moved_to else {})
    assert {k: n for k, n in pairs(conn).items() if n} == expected
    assert holding(conn) == expected, "the counters and the jobs disagree"
    assert SlotRepair(pool).run_once() == [], "the repair found a drift the triggers left"
    # A slot that moved is given back where it went.
    finish(conn, job.id)
    assert {k: n for k, n in pairs(conn).items() if n} == {("acme", "capped"): 2}


def test_truncating_the_jobs_table_leaves_no_counter_behind(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    enqueue_many(conn, [JobRequest("capped", {"n": i}, tenant_id="acme") for i in range(5)])
    assert len(claim(store)) == 3
    conn.execute("TRUNCATE pipeline.active_jobs")
    assert pairs(conn) == {}
    enqueue_many(conn, [JobRequest("capped", {"n": i}, tenant_id="acme") for i in range(5)])
    assert len(claim(store)) == 3, "the cap counted slots of jobs that are gone"


def test_an_operators_cap_wins_over_the_stage_default_and_zero_pauses(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    enqueue_many(
        conn, [JobRequest("capped", {}, tenant_id=t) for t in ("a", "b") for _ in range(9)]
    )
    set_cap(conn, "a", "capped", 5)
    set_cap(conn, "b", "capped", 0)
    claimed = Counter(j.tenant_id for j in claim(store, 20))
    assert claimed == {"a": 5}


def test_jobs_without_a_tenant_or_stage_cap_are_not_capped(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    enqueue_many(conn, [JobRequest("capped", {}) for _ in range(8)])
    enqueue_many(conn, [JobRequest("noop", {}, tenant_id="acme") for _ in range(8)])
    got = store.claim(["capped", "noop"], 20, WORKER, {"capped": 3, "noop": None})
    assert len(got) == 16
    assert conn.execute("SELECT count(*) FROM pipeline.jobs WHERE holds_slot").fetchone() == (0,)


def test_the_repair_recounts_drifted_counters_and_says_so(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    enqueue_many(conn, [JobRequest("capped", {}, tenant_id="acme") for _ in range(2)])
    claim(store)
    conn.execute("UPDATE pipeline.tenant_slots SET running = 7")
    drifts = SlotRepair(pool).run_once()
    assert [(d.tenant_id, d.stage, d.was, d.counted) for d in drifts] == [("acme", "capped", 7, 2)]
    assert slots(conn) == {"acme": 2}
    assert SlotRepair(pool).run_once() == []


@pytest.mark.parametrize(("limit", "rounds"), [(10, 4), (40, 1), (100, 1)])
def test_a_small_tenant_is_served_within_a_few_claims_of_a_big_import(
    conn: Conn, pool: ConnectionPool, limit: int, rounds: int
) -> None:
    store = JobStore(pool)
    enqueue_many(conn, [JobRequest("noop", {"n": i}, tenant_id="big") for i in range(10_000)])
    small = set(
        enqueue_many(conn, [JobRequest("noop", {"n": i}, tenant_id="small") for i in range(20)])
    )
    started: set[int] = set()
    for _ in range(rounds):
        started |= {j.id for j in store.claim(["noop"], limit, WORKER, {})}
    assert small <= started, f"{len(small - started)} of the small tenant's jobs still wait"


def test_claims_take_turns_across_tenants_least_recently_served_first(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    for tenant in ("a", "b", "c"):
        enqueue_many(conn, [JobRequest("noop", {}, tenant_id=tenant) for _ in range(5)])
    order = [store.claim(["noop"], 1, WORKER, {})[0].tenant_id for _ in range(6)]
    assert order == ["a", "b", "c", "a", "b", "c"]


def test_priority_comes_before_fairness(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    enqueue_many(conn, [JobRequest("noop", {}, tenant_id="a") for _ in range(5)])
    urgent = enqueue(conn, "noop", {}, tenant_id="b", priority=10)
    assert [j.id for j in store.claim(["noop"], 1, WORKER, {})] == [urgent]


def test_a_capped_pair_without_a_counter_row_gets_one_and_then_its_cap(
    conn: Conn, pool: ConnectionPool
) -> None:
    # Jobs older than their counter row, or a row deleted by hand: the claim makes the row and
    # leaves the pair for the next claim, which counts against it like any other.
    store = JobStore(pool)
    enqueue_many(conn, [JobRequest("capped", {}, tenant_id="acme") for _ in range(9)])
    conn.execute("DELETE FROM pipeline.tenant_slots")
    assert claim(store, 10) == []
    assert slots(conn) == {"acme": 0}
    assert len(claim(store, 10)) == CAPS["capped"]
    assert slots(conn) == {"acme": CAPS["capped"]} == dict(running_by_tenant(conn))


def test_a_claim_waits_for_a_counter_another_claim_holds_while_it_commits_and_counts_its_jobs(
    conn: Conn, db_url: str, pool: ConnectionPool
) -> None:
    # Claims deal one at a time and give the turn back before they commit, so the next claim
    # meets the counters of every pair the last one served still locked. Skipped, those pairs
    # got no room: a second worker's claims of ten capped tenants found nothing, and it napped
    # until its poll (sql/functions/lock_slots.sql).
    enqueue_many(conn, [JobRequest("capped", {"n": i}, tenant_id="acme") for i in range(9)])
    holder, held = claim_in_open_transaction(db_url, 2, types=["capped"], caps=CAPS)
    try:
        assert len(held) == 2  # uncommitted: it holds acme's counter
        got: list[list[ClaimedJob]] = []
        waiter = threading.Thread(target=lambda: got.append(claim(JobStore(pool), 10)))
        waiter.start()
        wait_for(lambda: lock_waiters(conn) == 1, timeout=10, what="the claim waiting")
        assert waiter.is_alive()
        holder.commit()
        waiter.join(timeout=10)
        assert not waiter.is_alive()
    finally:
        holder.close()
    # The cap less what the committed claim took, not nothing, and not the whole cap.
    assert [len(jobs) for jobs in got] == [CAPS["capped"] - 2]
    assert dict(running_by_tenant(conn)) == {"acme": CAPS["capped"]} == slots(conn)
