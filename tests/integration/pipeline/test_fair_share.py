"""Weighted fair share across tenants: shares follow the weights under contention, exactly
enough with concurrent claimers; idle share goes to whoever has work; no credit banked by
idling; caps and priorities still come first (sql/functions/claim_groups.sql, take_passes.sql)."""

from __future__ import annotations

import random
import threading
import uuid
from collections import Counter
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import JobRequest, enqueue, enqueue_many
from pg_pipeline.admin.tenants import clear_weight, set_cap, set_weight, tenant_weights
from pg_pipeline.maintenance import SlotRepair
from pg_pipeline.store import JobStore
from tests.support.claimers import run_claimers

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=7)


def backlog(conn: Conn, tenants: dict[str, int], stage: str = "noop") -> None:
    enqueue_many(
        conn,
        [JobRequest(stage, {"n": i}, tenant_id=t) for t, n in tenants.items() for i in range(n)],
    )


def within(got: Counter[str], weights: dict[str, float], tolerance: float = 0.10) -> bool:
    total, weight = sum(got.values()), sum(weights.values())
    return all(
        abs(got[t] - total * w / weight) <= tolerance * total * w / weight
        for t, w in weights.items()
    )


def claim_concurrently(
    db_url: str, claimers: int, until: int, caps: list[dict[str, int | None]] | None = None
) -> Counter[str]:
    """`claimers` threads, each its own pool, claiming batches of 1..10 and completing them,
    until `until` jobs were claimed in all; the tenants of the jobs claimed."""
    got: Counter[str] = Counter()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def claimer(seed: int, pool: ConnectionPool) -> None:
        rng = random.Random(seed)
        store = JobStore(pool)
        me = uuid.UUID(int=100 + seed)
        mine = caps[seed % len(caps)] if caps else {}
        try:
            while True:
                with lock:
                    if sum(got.values()) >= until:
                        return
                jobs = store.claim(["noop"], rng.randint(1, 10), me, mine)
                with lock:
                    got.update(j.tenant_id for j in jobs if j.tenant_id)
                store.complete([j.fence for j in jobs])
        except BaseException as exc:  # a deadlock detected would land here
            errors.append(exc)

    run_claimers(db_url, claimers, claimer)
    assert not errors, errors
    return got


def test_shares_follow_weights_1_2_4_with_eight_concurrent_claimers(
    db_url: str, conn: Conn
) -> None:
    weights = {"a": 1.0, "b": 2.0, "c": 4.0}
    for tenant, weight in weights.items():
        set_weight(conn, tenant, weight)
    backlog(conn, dict.fromkeys(weights, 3000))
    got = claim_concurrently(db_url, 8, until=3500)
    print(f"claimed per tenant, weights 1:2:4, 8 claimers: {dict(got)}")
    # c, the heaviest, took 4/7 of 3,500: 2,000 of its 3,000, never running dry.
    assert within(got, weights), got


def test_an_idle_tenants_share_goes_to_the_others(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    for tenant, weight in {"a": 1.0, "b": 2.0, "c": 4.0}.items():
        set_weight(conn, tenant, weight)
    backlog(conn, {"a": 1000, "c": 1000})  # b has nothing to do
    got: Counter[str] = Counter()
    for _ in range(100):
        jobs = store.claim(["noop"], 10, WORKER, {})
        assert len(jobs) == 10, "a claim left capacity unused while work was queued"
        got.update(j.tenant_id for j in jobs if j.tenant_id)
    assert within(got, {"a": 1.0, "c": 4.0}), got


def test_a_tenant_back_from_idle_banks_no_credit(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    backlog(conn, {"a": 2000})
    for _ in range(50):
        assert len(store.claim(["noop"], 10, WORKER, {})) == 10
    backlog(conn, {"b": 500})  # b was idle while a took 500
    got: Counter[str] = Counter()
    for _ in range(20):
        got.update(j.tenant_id for j in store.claim(["noop"], 10, WORKER, {}) if j.tenant_id)
    # Equal weights: b gets half from now on, not the 500 a took while it was away.
    assert within(got, {"a": 1.0, "b": 1.0}), got


def test_caps_still_hold_for_a_heavy_tenant(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    set_weight(conn, "a", 50)
    set_cap(conn, "a", "capped", 3)
    backlog(conn, {"a": 20, "b": 20}, stage="capped")
    got = Counter(j.tenant_id for j in store.claim(["capped"], 20, WORKER, {}))
    assert got == {"a": 3, "b": 17}


def test_priority_comes_before_weight(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    set_weight(conn, "a", 100)
    backlog(conn, {"a": 50})
    urgent = enqueue(conn, "noop", {}, tenant_id="b", priority=10)
    assert [j.id for j in store.claim(["noop"], 1, WORKER, {})] == [urgent]


def test_a_claims_batch_goes_to_the_best_priority_before_any_lower_one(
    conn: Conn, pool: ConnectionPool
) -> None:
    """The batch's first-pass shares went to every group whatever its priority: with nine
    tenants of priority 0 queued, a claim of 10 took one urgent job and nine lower ones."""
    store = JobStore(pool)
    backlog(conn, {f"t{i}": 5 for i in range(9)})
    enqueue_many(
        conn, [JobRequest("noop", {"n": i}, tenant_id="urgent", priority=5) for i in range(12)]
    )
    assert Counter(j.tenant_id for j in store.claim(["noop"], 10, WORKER, {})) == {"urgent": 10}
    # Its last two, then the batch's rest shared among the lower ones.
    got = Counter(j.tenant_id for j in store.claim(["noop"], 10, WORKER, {}))
    assert got["urgent"] == 2 and sum(got.values()) == 10


def test_a_stages_jobs_without_a_tenant_share_the_batch_once_a_tenants_job_is_queued(
    conn: Conn, pool: ConnectionPool
) -> None:
    """Stages of untenanted jobs alone are claimed without the group selection
    (sql/functions/claim.sql), each stage a group in priority order; one tenant's job queued
    in any of them brings the selection back, and with it the tenant's share of the batch."""
    store = JobStore(pool)
    types = ["noop", "effect"]
    enqueue_many(conn, [JobRequest("noop", {"n": i}) for i in range(20)])
    enqueue_many(conn, [JobRequest("effect", {"n": i}, priority=1) for i in range(2)])
    got = [(j.type, j.tenant_id) for j in store.claim(types, 4, WORKER, {})]
    assert Counter(got) == {("effect", None): 2, ("noop", None): 2}
    backlog(conn, {"a": 5})
    got = [(j.type, j.tenant_id) for j in store.claim(types, 4, WORKER, {})]
    assert Counter(got) == {("noop", None): 2, ("noop", "a"): 2}


def test_a_stages_own_weight_wins_over_the_tenants(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    set_weight(conn, "a", 4)
    set_weight(conn, "a", 1, stage="noop")
    backlog(conn, {"a": 500, "b": 500})
    got: Counter[str] = Counter()
    for _ in range(40):
        got.update(j.tenant_id for j in store.claim(["noop"], 10, WORKER, {}) if j.tenant_id)
    assert within(got, {"a": 1.0, "b": 1.0}), got
    assert [(w.tenant_id, w.stage, w.weight) for w in tenant_weights(conn)] == [
        ("a", None, 4.0),
        ("a", "noop", 1.0),
    ]


def test_a_weight_changed_at_runtime_counts_from_the_next_claim(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    backlog(conn, {"a": 2000, "b": 2000})
    for _ in range(20):
        store.claim(["noop"], 10, WORKER, {})  # equal shares: both have pass rows now
    set_weight(conn, "b", 3)
    got: Counter[str] = Counter()
    for _ in range(40):
        got.update(j.tenant_id for j in store.claim(["noop"], 10, WORKER, {}) if j.tenant_id)
    assert within(got, {"a": 1.0, "b": 3.0}), got
    assert clear_weight(conn, "b") and not clear_weight(conn, "b")
    got.clear()
    for _ in range(40):
        got.update(j.tenant_id for j in store.claim(["noop"], 10, WORKER, {}) if j.tenant_id)
    assert within(got, {"a": 1.0, "b": 1.0}), got


def test_the_least_weight_still_claims_and_a_tinier_one_is_refused(
    conn: Conn, pool: ConnectionPool
) -> None:
    """A pass advances by n / weight: a weight of 1e-310 took it past the largest double at the
    first claim, and every claim of the stage (every tenant's) failed with an overflow."""
    with pytest.raises(ValueError, match="weight"):
        set_weight(conn, "tiny", 1e-310)
    # Nor does the table take it written by hand (0027).
    with pytest.raises(psycopg.errors.CheckViolation):
        conn.execute("INSERT INTO pipeline.tenant_weights (tenant_id, weight) VALUES ('t', 1e-7)")
    set_weight(conn, "tiny", 1e-6)
    backlog(conn, {"tiny": 200, "b": 200})
    store = JobStore(pool)
    got: Counter[str] = Counter()
    for _ in range(40):
        jobs = store.claim(["noop"], 10, WORKER, {})
        got.update(j.tenant_id for j in jobs if j.tenant_id)
        store.complete([j.fence for j in jobs])
    assert got == {"b": 200, "tiny": 200}


def test_claimers_disagreeing_on_caps_never_deadlock(db_url: str, conn: Conn) -> None:
    # A pair capped for some workers (a default cap in their code, or a cap set meanwhile) and
    # not for others: counters locked out of order by some, passes waited for by all.
    set_weight(conn, "t1", 3)
    backlog(conn, {f"t{i}": 400 for i in range(6)})
    got = claim_concurrently(db_url, 8, until=2000, caps=[{"noop": 2}, {}])
    assert sum(got.values()) >= 2000


def test_the_slot_repair_removes_an_idle_pairs_pass(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    backlog(conn, {"a": 2, "b": 5})
    jobs = store.claim(["noop"], 4, WORKER, {})
    store.complete([j.fence for j in jobs if j.tenant_id == "a"])

    def passes() -> list[tuple[str, int]]:
        return conn.execute(
            "SELECT tenant_id, taken FROM pipeline.tenant_passes ORDER BY 1"
        ).fetchall()

    assert passes() == [("a", 2), ("b", 2)]
    SlotRepair(pool).run_once()
    assert passes() == [("b", 2)], "a has nothing left to do: its pass goes"
