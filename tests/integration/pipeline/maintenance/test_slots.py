"""The slot repair against real Postgres: short batches, idle pairs' rows removed, and caps that
hold while it runs (issue 20, defects 11 and 13)."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import JobRequest, enqueue_many
from pg_pipeline.maintenance import SlotDrift, SlotRepair
from pg_pipeline.store import ClaimedJob, JobStore
from tests.support.slots import held_slots

Conn = psycopg.Connection[Any]
CAPS = {"capped": 3}
WORKER = uuid.UUID(int=7)


pairs = held_slots


def claim(store: JobStore, limit: int = 10) -> list[ClaimedJob]:
    return store.claim(["capped"], limit, WORKER, CAPS)


def many_pairs(conn: Conn, tenants: int) -> None:
    """A queued job for each of `tenants` tenants: as many counter rows, none of them idle."""
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id) "
        "SELECT 'capped', 't' || lpad(g::text, 6, '0') FROM generate_series(1, %s) AS g",
        (tenants,),
    )


def test_the_repair_removes_the_rows_of_idle_pairs_and_keeps_those_with_work(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    enqueue_many(
        conn,
        [JobRequest("capped", {"n": i}, tenant_id=t) for t in ("busy", "done") for i in range(2)]
        + [JobRequest("noop", {}, tenant_id="waiting")],
    )
    jobs = claim(store)
    store.complete([j.fence for j in jobs if j.tenant_id == "done"])
    # A counter left wrong by a hand-made write to an idle pair: corrected by going.
    conn.execute("UPDATE pipeline.tenant_slots SET running = 4 WHERE tenant_id = 'done'")
    conn.execute("DELETE FROM pipeline.freed_slots WHERE tenant_id = 'done'")
    assert pairs(conn)[("done", "capped")] == 4
    assert set(pairs(conn)) == {("busy", "capped"), ("done", "capped"), ("waiting", "noop")}

    report = SlotRepair(pool).run_pass()

    assert pairs(conn) == {("busy", "capped"): 2, ("waiting", "noop"): 0}
    assert report.removed == 1
    assert report.drifts == [SlotDrift("done", "capped", 4, 0)]
    # The pair's next job makes its row again, and the cap holds.
    enqueue_many(conn, [JobRequest("capped", {"n": i}, tenant_id="done") for i in range(5)])
    assert pairs(conn)[("done", "capped")] == 0
    assert len([j for j in claim(store) if j.tenant_id == "done"]) == 3


def test_a_repair_pass_locks_one_short_batch_of_counters_at_a_time(
    db_url: str, conn: Conn, pool: ConnectionPool
) -> None:
    many_pairs(conn, 1000)
    store = JobStore(pool)
    free_between: list[int] = []  # counters free to lock, after each batch
    served: list[str] = []

    def between_batches() -> bool:
        # A claimer's view while the pass goes on: every counter is free, those the pass has
        # recounted too, and a capped claim of a pair it has done is served at once.
        with psycopg.connect(db_url) as claimer:
            free = claimer.execute(
                "SELECT count(*) FROM (SELECT 1 FROM pipeline.tenant_slots FOR UPDATE SKIP "
                "LOCKED) AS l"
            ).fetchone()
        assert free is not None
        free_between.append(int(free[0]))
        if not served:
            served.extend(str(j.tenant_id) for j in store.claim(["capped"], 1, WORKER, CAPS))
        return False

    report = SlotRepair(pool, batch=100, stop=between_batches).run_pass()

    assert report.batches == 11  # ten full ones, and the one that finds the end
    assert free_between == [1000] * 10
    assert served == ["t000001"], "a claim of a pair the pass had done found it locked"


def test_a_stopping_worker_ends_a_repair_pass_between_batches(
    conn: Conn, pool: ConnectionPool
) -> None:
    many_pairs(conn, 300)
    report = SlotRepair(pool, batch=100, stop=lambda: True).run_pass()
    assert report.batches == 1


def test_a_pair_whose_row_went_under_an_enqueue_in_flight_stays_capped(
    db_url: str, conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    enqueue_many(conn, [JobRequest("capped", {}, tenant_id="acme")])
    store.complete([j.fence for j in claim(store)])  # the pair is idle, its row still there
    with psycopg.connect(db_url) as enqueuing:
        # The enqueue's trigger sees the row and makes none; the repair cannot see the job yet.
        enqueue_many(
            enqueuing, [JobRequest("capped", {"n": i}, tenant_id="acme") for i in range(6)]
        )
        assert SlotRepair(pool).run_pass().removed == 1
        enqueuing.commit()
    assert pairs(conn) == {}

    taken: list[ClaimedJob] = []
    for _ in range(3):
        taken += claim(store)
    assert len(taken) == 3, "the cap did not hold for a pair that lost its row"
    assert pairs(conn) == {("acme", "capped"): 3}


def test_claimers_and_repair_passes_at_once_never_miscount_a_slot(
    db_url: str, conn: Conn, pool: ConnectionPool
) -> None:
    tenants = [f"t{i}" for i in range(4)]
    enqueue_many(
        conn, [JobRequest("capped", {"n": i}, tenant_id=tenants[i % 4]) for i in range(600)]
    )
    stop = threading.Event()
    drifts: list[SlotDrift] = []
    peak = [0]

    def repairing() -> None:
        # Batches of one pair: as many transactions, and interleavings, as there can be.
        repair = SlotRepair(pool, batch=1)
        while not stop.is_set():
            drifts.extend(repair.run_once())
            row = conn.execute(
                "SELECT max(n) FROM (SELECT count(*) AS n FROM pipeline.jobs WHERE status = "
                "'running' "
                "GROUP BY tenant_id) AS r"
            ).fetchone()
            peak[0] = max(peak[0], (row[0] if row else None) or 0)

    def claiming(seed: int) -> None:
        store = JobStore(pool)
        me = uuid.UUID(int=200 + seed)
        while True:
            jobs = store.claim(["capped"], 1 + seed, me, CAPS)
            if jobs:
                store.complete([j.fence for j in jobs])
            elif not queued():  # not a pair held by another claimer or the repair: the end
                return

    def queued() -> int:
        with pool.connection() as c:
            row = c.execute("SELECT count(*) FROM pipeline.jobs WHERE status = 'queued'").fetchone()
        return int(row[0]) if row else 0

    repairer = threading.Thread(target=repairing)
    claimers = [threading.Thread(target=claiming, args=(i,)) for i in range(3)]
    repairer.start()
    for thread in claimers:
        thread.start()
    for thread in claimers:
        thread.join(timeout=240)
    stop.set()
    repairer.join(timeout=60)

    assert not any(t.is_alive() for t in claimers)
    assert conn.execute("SELECT count(*) FROM pipeline.jobs WHERE status <> 'done'").fetchone() == (
        0,
    )
    assert drifts == [], "the repair saw a counter the triggers had not kept right"
    assert peak[0] <= 3
    SlotRepair(pool).run_once()
    assert pairs(conn) == {}, "idle pairs kept their rows"
