"""The queue's SQL, driven directly: enqueue, claim, fence, reclaim, retry, cancel."""

from __future__ import annotations

import re
import sys
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import InvalidPayload, JobRequest, UnknownStage, enqueue, enqueue_many
from pg_pipeline import store as store_module
from pg_pipeline.db import make_pool
from pg_pipeline.maintenance import Reclaimer
from pg_pipeline.queries import Q
from pg_pipeline.store import FREE_CRASH_RECLAIMS, FREE_RELEASES, JobStore, WorkerInfo
from tests.support.claimers import claim_in_open_transaction
from tests.support.history import cancel
from tests.support.waiting import lock_waiters, wait_for

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=1)
ME = WorkerInfo(WORKER, ["noop"], 4)
OTHER = WorkerInfo(uuid.UUID(int=2), ["noop"], 4)


def job_row(conn: Conn, job_id: int) -> dict[str, Any]:
    cur = conn.execute("SELECT * FROM pipeline.jobs WHERE id = %s", (job_id,))
    row = cur.fetchone()
    assert row is not None
    return dict(zip([d.name for d in cur.description or []], row, strict=True))


def count_jobs(conn: Conn) -> int:
    row = conn.execute("SELECT count(*) FROM pipeline.jobs").fetchone()
    assert row is not None
    return int(row[0])


def expire_lease(conn: Conn, job_id: int) -> None:
    """Simulate a worker that died: its lease is in the past."""
    conn.execute(
        "UPDATE pipeline.active_jobs SET leased_until = now() - interval '1 second' WHERE id = %s",
        (job_id,),
    )


# -- enqueue --------------------------------------------------------------------------------


def test_enqueue_rolled_back_with_the_callers_transaction_leaves_no_job(conn: Conn) -> None:
    conn.execute("CREATE TABLE orders (id int)")
    with pytest.raises(RuntimeError), conn.transaction():
        conn.execute("INSERT INTO orders VALUES (1)")
        enqueue(conn, "noop", {"n": 1})
        raise RuntimeError("the caller changes its mind")
    assert count_jobs(conn) == 0
    assert conn.execute("SELECT count(*) FROM orders").fetchone() == (0,)

    with conn.transaction():
        conn.execute("INSERT INTO orders VALUES (2)")
        job_id = enqueue(conn, "noop", {"n": 2}, tenant_id=7, priority=5)
    row = job_row(conn, job_id)
    assert (row["status"], row["tenant_id"], row["priority"], row["payload"]) == (
        "queued",
        "7",
        5,
        {"n": 2},
    )


def test_bad_payload_raises_at_enqueue_and_inserts_nothing(conn: Conn) -> None:
    with pytest.raises(InvalidPayload, match="seconds"):
        enqueue(conn, "nap", {"seconds": "soon"})
    with pytest.raises(UnknownStage, match="'resize'"):
        enqueue(conn, "resize", {})
    with pytest.raises(InvalidPayload):
        enqueue_many(conn, [JobRequest("noop", {"n": 1}), JobRequest("noop", {"n": "x"})])
    assert count_jobs(conn) == 0


def test_dedup_key_returns_the_existing_job(conn: Conn) -> None:
    first = enqueue(conn, "noop", {"n": 1}, dedup_key="nightly-2026-12-01")
    again = enqueue(conn, "noop", {"n": 2}, dedup_key="nightly-2026-12-01")
    other = enqueue(conn, "noop", {"n": 3}, dedup_key="nightly-2026-12-02")
    assert first == again != other
    assert count_jobs(conn) == 2


def test_enqueue_many_inserts_in_one_statement(conn: Conn) -> None:
    ids = enqueue_many(conn, [JobRequest("noop", {"n": i}, tenant_id="t") for i in range(500)])
    assert len(set(ids)) == 500
    assert count_jobs(conn) == 500


def test_enqueue_many_stores_every_column_of_every_row_in_order(conn: Conn) -> None:
    # Some columns set in only some rows, payloads that take both ways through the encoder
    # (a null or a quote in the text), a row with a dedup key among rows without.
    requests = [
        JobRequest("nap", {"seconds": 0.5, "mark": 'a "quoted" \\ mark'}),
        JobRequest("nap", {"seconds": 1, "mark": "Grüße\n日本"}, tenant_id=3, priority=7),
        JobRequest("noop", {"n": 2}, max_attempts=9, dedup_key="only-one"),
        JobRequest("noop", {}, run_after=timedelta(hours=1)),
    ]
    ids = enqueue_many(conn, requests)
    assert len(ids) == 4 and ids == sorted(ids)
    rows = [job_row(conn, job_id) for job_id in ids]
    got = [(r["type"], r["payload"], r["tenant_id"], r["priority"], r["dedup_key"]) for r in rows]
    assert got == [
        ("nap", {"seconds": 0.5, "mark": 'a "quoted" \\ mark'}, None, 0, None),
        ("nap", {"seconds": 1.0, "mark": "Grüße\n日本"}, "3", 7, None),
        ("noop", {"n": 2}, None, 0, "only-one"),
        ("noop", {"n": 0}, None, 0, None),
    ]
    assert [r["max_attempts"] for r in rows[2:]] == [9, 5]
    assert rows[3]["run_after"] > rows[0]["run_after"] + timedelta(minutes=59)
    # The keyed row is skipped when enqueued again; the rest are new.
    again = enqueue_many(conn, [JobRequest("noop", {"n": 5}, dedup_key="only-one"), *requests[:1]])
    assert len(again) == 1 and again[0] > ids[-1]


def test_enqueue_many_stores_values_every_row_shares(conn: Conn) -> None:
    # A column every row shares travels as one value instead of an array: each row must get it.
    parent = enqueue(conn, "noop", {})
    when = datetime.now(UTC) + timedelta(hours=2)
    shared = {"tenant_id": "acme", "priority": -4, "run_after": when, "max_attempts": 2}
    requests = [
        JobRequest("nap", {"seconds": i}, parent_id=parent, root_id=parent, **shared)  # type: ignore[arg-type]
        for i in range(3)
    ]
    ids = enqueue_many(conn, requests)
    rows = [job_row(conn, job_id) for job_id in ids]
    assert [r["payload"]["seconds"] for r in rows] == [0.0, 1.0, 2.0]
    for r in rows:
        assert (r["type"], r["tenant_id"], r["priority"]) == ("nap", "acme", -4)
        assert r["max_attempts"] == 2
        assert (r["run_after"], r["parent_id"], r["root_id"]) == (when, parent, parent)
    # One key shared by every row: one job, however many rows asked for it.
    keyed = enqueue_many(conn, [JobRequest("noop", {"n": i}, dedup_key="same") for i in range(4)])
    assert len(keyed) == 1 and job_row(conn, keyed[0])["payload"] == {"n": 0}
    # A column shared by all rows but one varies: the odd row keeps its own value, NULL too.
    mixed = enqueue_many(
        conn, [JobRequest("noop", {}, tenant_id=None if i == 2 else "t") for i in range(4)]
    )
    assert [job_row(conn, i)["tenant_id"] for i in mixed] == ["t", "t", None, "t"]


def test_enqueue_many_too_big_for_one_statement_inserts_all_or_nothing(
    conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A statement's payloads are one jsonb value, capped by Postgres; shrink the share.
    # (sys.modules: the package's `enqueue` is the function of that name.)
    monkeypatch.setattr(sys.modules["pg_pipeline.enqueue"], "_STATEMENT_PAYLOAD_CHARS", 40)
    ids = enqueue_many(conn, [JobRequest("noop", {"n": i}) for i in range(25)])
    assert len(ids) == 25 and ids == sorted(ids)
    payloads = conn.execute("SELECT payload FROM pipeline.jobs ORDER BY id").fetchall()
    assert [p[0]["n"] for p in payloads] == list(range(25))
    # Every chunk in one transaction: a failing later chunk takes the earlier ones with it.
    conn.execute(
        "CREATE FUNCTION refuse_n_20() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        " IF NEW.payload->>'n' = '20' THEN RAISE EXCEPTION 'no 20'; END IF; RETURN NEW; END $$"
    )
    conn.execute(
        "CREATE TRIGGER refuse_n_20 BEFORE INSERT ON pipeline.active_jobs"
        " FOR EACH ROW EXECUTE FUNCTION refuse_n_20()"
    )
    with pytest.raises(psycopg.errors.RaiseException, match="no 20"):
        enqueue_many(conn, [JobRequest("noop", {"n": i}) for i in range(25)])
    assert count_jobs(conn) == 25


def test_notification_arrives_only_when_the_enqueue_commits(db_url: str, conn: Conn) -> None:
    with psycopg.connect(db_url, autocommit=True) as listener:
        listener.execute("LISTEN pipeline_jobs")
        with pytest.raises(RuntimeError), conn.transaction():
            enqueue(conn, "noop", {})
            raise RuntimeError
        assert list(listener.notifies(timeout=0.2)) == []
        with conn.transaction():
            enqueue(conn, "noop", {})
        notes = list(listener.notifies(timeout=2, stop_after=1))
        assert [n.payload for n in notes] == ["noop"]


# -- claim ------------------------------------------------------------------------------------


def test_claim_orders_by_priority_then_run_after_and_skips_future_jobs(
    conn: Conn, pool: ConnectionPool
) -> None:
    low = enqueue(conn, "noop", {}, priority=0)
    high = enqueue(conn, "noop", {}, priority=9)
    enqueue(conn, "noop", {}, run_after=timedelta(hours=1))
    other_type = enqueue(conn, "effect", {})
    claimed = JobStore(pool).claim(["noop"], 10, WORKER)
    assert {j.id for j in claimed} == {high, low}
    assert all(j.attempts == 1 for j in claimed)
    row = job_row(conn, high)
    assert row["status"] == "running" and row["worker_id"] == WORKER
    assert row["leased_until"] > row["started_at"]
    assert job_row(conn, other_type)["status"] == "queued"


def test_claim_takes_the_highest_priority_first(conn: Conn, pool: ConnectionPool) -> None:
    ids = [enqueue(conn, "noop", {}, priority=p) for p in (1, 3, 2)]
    store = JobStore(pool)
    order = [store.claim(["noop"], 1, WORKER)[0].id for _ in range(3)]
    assert order == [ids[1], ids[2], ids[0]]


@pytest.mark.parametrize("tenant", [None, "a"])
def test_the_claim_returns_what_a_claimed_job_is_made_of_and_no_more_of_the_row(
    conn: Conn, tenant: str | None
) -> None:
    # Each claimed row is copied twice on its way out (pipeline.claim_take's result, then the
    # claim's): the row's other columns cost the claiming backend 0.2-0.5 us a job.
    parent = enqueue(conn, "noop", {})
    child = enqueue(conn, "noop", {"n": 7}, tenant_id=tenant, parent_id=parent, root_id=parent)
    cur = conn.execute("SELECT * FROM pipeline.claim(ARRAY['noop'], 5, %s, '{}', '{}')", (WORKER,))
    names = [column.name for column in cur.description or []]
    rows = cur.fetchall()
    assert names == [
        "id", "type", "tenant_id", "payload", "priority", "attempts", "max_attempts",
        "lease_seconds", "parent_id", "root_id", "claims", "suspect", "traceparent",
    ]  # fmt: skip
    assert [row[:4] + row[8:11] for row in rows if row[0] == child] == [
        (child, "noop", tenant, {"n": 7}, parent, parent, 1)
    ]


def test_a_tenant_whose_best_job_waits_still_gets_its_ready_ones(
    conn: Conn, pool: ConnectionPool
) -> None:
    # The claim finds each tenant's head from the first entry of its range; when that entry
    # is a job not due yet, the head is looked for further on.
    later = timedelta(hours=1)
    enqueue(conn, "noop", {}, tenant_id="a", priority=9, run_after=later)
    ready = [enqueue(conn, "noop", {}, tenant_id="a", priority=p) for p in (1, 4)]
    enqueue(conn, "noop", {}, tenant_id="b", priority=5, run_after=later)
    untenanted = enqueue(conn, "noop", {}, priority=2)
    store = JobStore(pool)
    assert [j.id for j in store.claim(["noop"], 1, WORKER)] == [ready[1]]
    assert {j.id for j in store.claim(["noop"], 10, WORKER)} == {ready[0], untenanted}
    assert store.claim(["noop"], 10, WORKER) == []


@pytest.mark.parametrize("tenants", [(None,), ("a",), ("a", "b")])
def test_each_claim_takes_the_next_jobs_in_order_across_priority_levels(
    conn: Conn, pool: ConnectionPool, tenants: tuple[str | None, ...]
) -> None:
    # A claim's pick starts at the head its probe found, at the head's priority, then goes on
    # to lower ones: the jobs taken before it leave entries ahead of the head, and a level can
    # run out within one claim. Run_afters are shuffled against ids, so FIFO means run_after.
    base = datetime.now(UTC) - timedelta(hours=1)
    levels = {5: 3, 3: 2, 0: 4, -2: 3}
    expected: dict[str | None, list[int]] = {t: [] for t in tenants}
    for n, tenant in enumerate(tenants):
        rows = []
        for priority, count in levels.items():
            # A second tenant has fewer: when it runs dry, the first takes its share's rest
            # in the claim's second pass.
            for k in range(count - n):
                rows.append((priority, base + timedelta(seconds=(7 * k + priority) % 11)))
        for priority, run_after in reversed(rows):
            job = enqueue(
                conn, "noop", {}, tenant_id=tenant, priority=priority, run_after=run_after
            )
            expected[tenant].append(job)
        expected[tenant].sort(
            key=lambda j: (-job_row(conn, j)["priority"], job_row(conn, j)["run_after"], j)
        )
    store = JobStore(pool)
    taken: dict[str | None, list[int]] = {t: [] for t in tenants}
    for limit in (2, 4, 7, 5, 50):
        batch = store.claim(["noop"], limit, WORKER)
        assert len(batch) == min(limit, sum(len(v) - len(taken[t]) for t, v in expected.items()))
        for job in batch:
            taken[job.tenant_id].append(job.id)
        # Whatever each tenant's share was, it got its next jobs in order, none skipped.
        for tenant in tenants:
            assert set(taken[tenant]) == set(expected[tenant][: len(taken[tenant])]), limit
    assert {t: sorted(v) for t, v in taken.items()} == {t: sorted(v) for t, v in expected.items()}


def test_concurrent_claimers_never_get_the_same_job(conn: Conn, pool: ConnectionPool) -> None:
    total = 3000
    enqueue_many(conn, [JobRequest("noop", {"n": i}) for i in range(total)])
    store = JobStore(pool)
    claimed: list[list[int]] = [[] for _ in range(8)]
    start = threading.Barrier(8)

    def claimer(slot: int) -> None:
        start.wait()
        while batch := store.claim(["noop"], 25, uuid.UUID(int=slot + 1)):
            claimed[slot].extend(j.id for j in batch)

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [job_id for ids in claimed for job_id in ids]
    assert len(every) == total
    assert len(set(every)) == total
    assert sum(1 for ids in claimed if ids) > 1, "only one claimer got work; no contention tested"


#: pipeline.claim_turn's key, the first of its advisory locks' two
TURN_LOCKS = "pipeline.claim_turn_key()"


def hold_turn(db_url: str, turn: int) -> Conn:
    """A connection that holds claim turn `turn`, as a claim does while it deals."""
    holder = psycopg.connect(db_url, autocommit=True)
    holder.execute(f"SELECT pg_advisory_lock({TURN_LOCKS}, %s)", (turn,))
    return holder


def turn_given_to(conn: Conn, dealing: Conn, claim: Callable[[], None]) -> None:
    """Run `claim` in a thread while `dealing` holds turn 0: it must wait for the turn, and run
    once the turn is given back. `dealing` is closed."""
    waiter = threading.Thread(target=claim)
    try:
        waiter.start()
        wait_for(lambda: lock_waiters(conn) == 1, timeout=10, what="the claim waiting its turn")
        assert waiter.is_alive()  # it has taken nothing yet
        dealing.execute(f"SELECT pg_advisory_unlock({TURN_LOCKS}, 0)")
        waiter.join(timeout=10)
    finally:
        dealing.close()


def turns_held(conn: Conn, holder: Conn) -> int:
    """The claim turns (advisory locks) `holder`'s session holds."""
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = %s",
        (holder.info.backend_pid,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_claim_waits_its_turn_while_another_deals_then_takes_the_jobs(
    conn: Conn, db_url: str
) -> None:
    # With one turn: sixteen workers claiming at once each walked past the rows the others held
    # locked, at several times a lone claim's CPU (sql/functions/claim_turn.sql).
    conn.execute(f'ALTER DATABASE "{conn.info.dbname}" SET pg_pipeline.claim_turns = 1')
    ids = [enqueue(conn, "noop", {"n": n}) for n in range(2)]
    dealing = hold_turn(db_url, 0)
    got: list[list[int]] = []
    with make_pool(db_url, max_size=1, name="pg-pipeline tests") as pool:
        turn_given_to(
            conn,
            dealing,
            lambda: got.append([j.id for j in JobStore(pool).claim(["noop"], 2, WORKER)]),
        )
    assert got == [ids]


def test_a_claim_gives_its_turn_back_before_it_commits_and_the_next_steps_past_its_jobs(
    conn: Conn, db_url: str
) -> None:
    # Held to the commit, a turn lined up every claim's WAL flush behind the one before
    # (sql/functions/claim.sql).
    conn.execute(f'ALTER DATABASE "{conn.info.dbname}" SET pg_pipeline.claim_turns = 1')
    ids = [enqueue(conn, "noop", {"n": n}) for n in range(4)]
    holder, held = claim_in_open_transaction(db_url, 2)
    try:
        assert held == ids[:2]
        assert turns_held(conn, holder) == 0
        # The next claim goes ahead at once, past the uncommitted claim's rows.
        with make_pool(db_url, max_size=1, name="pg-pipeline tests") as pool:
            assert [j.id for j in JobStore(pool).claim(["noop"], 4, WORKER)] == ids[2:]
    finally:
        holder.close()


@pytest.mark.parametrize("timeout", ["lock_timeout", "statement_timeout"])
def test_a_claim_that_fails_in_its_turn_gives_the_turn_back(
    conn: Conn, db_url: str, timeout: str
) -> None:
    # A turn is a session's lock, which a rollback does not free: one kept by a worker's idle
    # connection would stop every claim of the database.
    enqueue(conn, "noop", {})
    blocker = psycopg.connect(db_url)
    claimer = psycopg.connect(
        db_url, autocommit=True, options=f"-c pg_pipeline.claim_turns=1 -c {timeout}=100"
    )
    try:
        # The claim takes its turn, then waits for the table past its timeout.
        blocker.execute("LOCK TABLE pipeline.active_jobs IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(
            psycopg.errors.LockNotAvailable
            if timeout == "lock_timeout"
            else psycopg.errors.QueryCanceled
        ):
            claimer.execute(
                Q["claim"],
                {"types": ["noop"], "limit": 1, "worker_id": WORKER, "cap_stages": [], "caps": []},
            )
        assert turns_held(conn, claimer) == 0
    finally:
        blocker.close()
        claimer.close()


def test_as_many_claims_run_at_once_as_the_turns_setting_says_and_with_it_zero_none_wait(
    conn: Conn, db_url: str
) -> None:
    ids = [enqueue(conn, "noop", {"n": n}) for n in range(3)]
    first, second = hold_turn(db_url, 0), hold_turn(db_url, 1)
    got: list[list[int]] = []

    def third() -> None:
        holder, took = claim_in_open_transaction(db_url, 1, turns=2)
        holder.commit()
        holder.close()
        got.append(took)

    waiter = threading.Thread(target=third)
    unturned: list[Conn] = []
    try:
        waiter.start()
        wait_for(lambda: lock_waiters(conn) == 1, timeout=10, what="the third claim waiting")
        # Turns are off with 0, however spelled: such a claim takes its job at once.
        for turns, job_id in ((0, ids[0]), ("00", ids[1])):
            holder, rest = claim_in_open_transaction(db_url, 1, turns=turns)
            unturned.append(holder)
            assert rest == [job_id] and got == []
            holder.commit()
        # It waits for the turn its backend tries first, which either may hold.
        first.execute(f"SELECT pg_advisory_unlock({TURN_LOCKS}, 0)")
        second.execute(f"SELECT pg_advisory_unlock({TURN_LOCKS}, 1)")
        waiter.join(timeout=10)
    finally:
        for c in (first, second, *unturned):
            c.close()
    assert got == [[ids[2]]]


@pytest.mark.parametrize("turns", [None, "many"])
def test_a_claim_takes_one_turn_unless_the_setting_says_otherwise(
    conn: Conn, db_url: str, turns: str | None
) -> None:
    # One turn by default: sixteen worker processes claiming at once without turns drained
    # slower than four on 2 cores (benchmarks/FLEET.md). A mistyped setting falls back to it.
    job_id = enqueue(conn, "noop", {})
    dealing = hold_turn(db_url, 0)
    got: list[list[int]] = []

    def claim() -> None:
        holder, took = claim_in_open_transaction(db_url, 1, turns=turns)
        holder.commit()
        holder.close()
        got.append(took)

    turn_given_to(conn, dealing, claim)
    assert got == [[job_id]]


# -- the fence ----------------------------------------------------------------------------------


def test_a_stale_claim_writes_nothing_after_reclaim(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    job_id = enqueue(conn, "noop", {})
    stale = store.claim(["noop"], 1, WORKER)[0]
    expire_lease(conn, job_id)
    assert Reclaimer(pool).run_once() == [(job_id, "noop", "queued")]
    fresh = store.claim(["noop"], 1, uuid.UUID(int=2))[0]
    # The crash reclaim refunded the attempt, yet the fencing token moved on.
    assert fresh.attempts == stale.attempts == 1
    assert fresh.claim == stale.claim + 1 and fresh.suspect

    assert store.heartbeat(OTHER, [stale.fence]) == {}
    assert store.complete([stale.fence]) == set()
    assert not store.fail(stale, "boom")
    assert not store.retry_later(stale, "boom", 0)
    assert store.release([stale.fence]) == {}
    row = job_row(conn, job_id)
    assert (row["status"], row["claims"]) == ("running", 2)
    assert row["last_error"].startswith("lease expired: its worker died or stalled")

    assert store.heartbeat(OTHER, [fresh.fence]) == {job_id: True}
    assert store.complete([fresh.fence]) == {job_id}
    assert job_row(conn, job_id)["status"] == "done"


def test_an_acknowledgement_holds_each_fence_of_its_batch_whatever_its_order(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    ids = [enqueue(conn, "noop", {}) for _ in range(4)]
    held = {j.id: j for j in store.claim(["noop"], 4, WORKER)}
    assert cancel(conn, ids[1])
    stale = (ids[2], held[ids[2]].claim + 1)  # a claim this job never had
    fences = [held[ids[3]].fence, stale, held[ids[1]].fence, held[ids[0]].fence]
    assert store.acknowledge(fences, lock_wait_s=1.0) == {ids[0], ids[3]}
    assert [job_row(conn, i)["status"] for i in ids] == ["done", "cancelled", "running", "done"]
    # The statement alone, given its arrays unsorted (the store sorts them): it may leave jobs
    # out, but never deletes one whose own fence in the batch does not hold.
    more = [enqueue(conn, "noop", {}) for _ in range(3)]
    claimed = {j.id: j for j in store.claim(["noop"], 3, WORKER)}
    wrong = claimed[more[1]].claim + 1
    pairs = [(more[2], claimed[more[2]].claim), (more[1], wrong), (more[0], claimed[more[0]].claim)]
    params = {
        "ids": "{" + ",".join(str(p[0]) for p in pairs) + "}",
        "claims": "{" + ",".join(str(p[1]) for p in pairs) + "}",
        "started": None, "logs": None, "dropped": None, "wall_us": None, "cpu_us": None,
        "usage": None,
    }  # fmt: skip
    with conn.transaction():
        conn.execute(Q["acknowledge"], params).fetchall()
    assert job_row(conn, more[1])["status"] == "running"


def test_an_acknowledgement_waits_out_a_moments_lock_and_confirms_the_row_as_left(
    conn: Conn, pool: ConnectionPool, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row locked by a heartbeat (which extends its lease) is deleted once the lock goes, in
    the version the heartbeat left: its fence still holds. Before, the batch skipped it, and
    its worker had to settle it alone."""
    monkeypatch.setattr(store_module, "ACK_ROW_WAIT_S", 30.0)  # the lock goes long before
    store = JobStore(pool)
    ids = [enqueue(conn, "noop", {}) for _ in range(2)]
    held = store.claim(["noop"], 2, WORKER)
    beat = psycopg.connect(db_url)
    try:
        beat.execute(
            "UPDATE pipeline.active_jobs SET leased_until = leased_until + interval '1 minute' "
            "WHERE id = %s",
            (ids[1],),
        )
        done: list[set[int]] = []
        acker = threading.Thread(
            target=lambda: done.append(store.acknowledge([j.fence for j in held], lock_wait_s=30))
        )
        acker.start()
        wait_for(
            lambda: lock_waiters(conn) == 1,
            timeout=10,
            what="the acknowledgement waiting for the locked row",
        )
        beat.commit()
        acker.join(timeout=10)
    finally:
        beat.close()
    assert done == [set(ids)]
    assert [job_row(conn, i)["status"] for i in ids] == ["done", "done"]


def test_an_acknowledgement_skips_a_row_locked_past_its_wait_and_writes_the_rest(
    conn: Conn, pool: ConnectionPool, db_url: str
) -> None:
    store = JobStore(pool)
    ids = [enqueue(conn, "noop", {}) for _ in range(3)]
    held = store.claim(["noop"], 3, WORKER)
    operator = psycopg.connect(db_url)
    try:
        operator.execute("SELECT FROM pipeline.active_jobs WHERE id = %s FOR UPDATE", (ids[1],))
        assert store.acknowledge([j.fence for j in held], lock_wait_s=1.0) == {ids[0], ids[2]}
        assert store.still_held([held[1].fence]) == {ids[1]}
    finally:
        operator.close()
    assert [job_row(conn, i)["status"] for i in ids] == ["done", "running", "done"]


def test_completion_steps_roll_back_when_the_fence_fails(conn: Conn, pool: ConnectionPool) -> None:
    from pg_pipeline import LeaseLost

    conn.execute("CREATE TABLE outputs (job_id bigint)")
    store = JobStore(pool)
    job_id = enqueue(conn, "noop", {})
    job = store.claim(["noop"], 1, WORKER)[0]
    assert cancel(conn, job_id)

    def write_output(c: Conn) -> None:
        c.execute("INSERT INTO outputs VALUES (%s)", (job.id,))

    with pytest.raises(LeaseLost):
        store.complete_with(job, [write_output])
    assert conn.execute("SELECT count(*) FROM outputs").fetchone() == (0,)


def test_heartbeat_extends_only_owned_leases_and_marks_the_worker_alive(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    store.register_worker(ME)
    conn.execute("UPDATE pipeline.workers SET last_seen = now() - interval '1 hour'")
    ids = [enqueue(conn, "noop", {}) for _ in range(3)]
    held = store.claim(["noop"], 3, WORKER)
    conn.execute("UPDATE pipeline.active_jobs SET leased_until = now() WHERE id = ANY(%s)", (ids,))
    assert cancel(conn, ids[0])
    owned = store.heartbeat(ME, [j.fence for j in held])
    assert owned == dict.fromkeys(ids[1:], True)
    rows = conn.execute(
        "SELECT leased_until > now() + interval '20 seconds' FROM pipeline.jobs WHERE id = ANY(%s) "
        "ORDER BY id",
        (ids[1:],),
    ).fetchall()
    assert rows == [(True,), (True,)]
    seen = conn.execute("SELECT last_seen > now() - interval '1 minute' FROM pipeline.workers")
    assert seen.fetchone() == (True,)


def explained(pool: ConnectionPool) -> list[str]:
    """The plans of the statements the pool's one connection runs from now on (auto_explain),
    as they come."""
    notices: list[str] = []
    with pool.connection() as c:
        c.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
        c.execute("LOAD 'auto_explain'")
        c.execute("SET auto_explain.log_min_duration = 0")
        c.execute("SET auto_explain.log_level = notice")
    return notices


def fill_the_queue_with_running_jobs(conn: Conn) -> list[tuple[int, int]]:
    """5,000 running jobs, arrived without an analysis since; the fences of 200 of them."""
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload, status, claims, leased_until) "
        "SELECT 'noop', '{}', 'running', 1, now() + interval '1h' "
        "FROM generate_series(1, 5000)"
    )
    rows = conn.execute(
        "SELECT id, claims FROM pipeline.active_jobs WHERE status = 'running' "
        "ORDER BY id DESC LIMIT 200"
    ).fetchall()
    return [(i, n) for i, n in rows]


def test_a_heartbeat_reads_its_jobs_by_key_after_beating_on_an_empty_queue(
    conn: Conn, db_url: str
) -> None:
    # A worker's first beats on a quiet queue: prepared, the statement's plan was made then and
    # kept, a scan of the whole table for each beat once the queue filled.
    pool = make_pool(db_url, max_size=1, name="one connection")
    try:
        store = JobStore(pool)
        enqueue(conn, "noop", {})
        first = store.claim(["noop"], 1, WORKER)
        # Its job gone (cancelled, say), and the queue vacuumed empty: no pages, no rows.
        conn.execute("DELETE FROM pipeline.active_jobs")
        conn.execute("VACUUM ANALYZE pipeline.active_jobs")
        # psycopg prepares the statement on its sixth run, and the server plans it afresh five
        # times more before it may keep a generic plan: beats enough for both.
        for _ in range(15):
            store.heartbeat(ME, [j.fence for j in first])
        held = fill_the_queue_with_running_jobs(conn)
        notices = explained(pool)
        owned = store.heartbeat(ME, held)
        assert owned == {i: True for i, _ in held}
        plan = "\n".join(notices)
        assert "active_jobs" in plan, plan
        assert "Seq Scan on active_jobs" not in plan, plan
    finally:
        pool.close()


def test_still_held_reads_its_jobs_by_key_after_asking_on_an_empty_queue(
    conn: Conn, db_url: str
) -> None:
    # As the heartbeat's test above: asked first while the queue was empty, prepared, the
    # statement kept a plan that read the whole table once the queue filled (the join of the
    # arrays with the table, into a hash; the probes by key, once for each job).
    pool = make_pool(db_url, max_size=1, name="one connection")
    try:
        store = JobStore(pool)
        enqueue(conn, "noop", {})
        first = store.claim(["noop"], 1, WORKER)
        conn.execute("DELETE FROM pipeline.active_jobs")
        conn.execute("VACUUM ANALYZE pipeline.active_jobs")
        for _ in range(15):
            assert store.still_held([j.fence for j in first]) == set()
        held = fill_the_queue_with_running_jobs(conn)
        lost = (held[0][0], held[0][1] + 1)  # a claim this job never had
        notices = explained(pool)
        assert store.still_held([*held[1:], lost]) == {i for i, _ in held[1:]}
        plan = "\n".join(notices)
        assert "active_jobs" in plan, plan
        assert "Seq Scan on active_jobs" not in plan, plan
    finally:
        pool.close()


def test_cancel_hints_are_read_by_id_after_checks_on_an_empty_history(
    conn: Conn, db_url: str
) -> None:
    # A worker's first cancel hints early in a day, its day of the history vacuumed empty (or
    # new): prepared, the statement kept a plan made for an empty day, which read the day whole
    # once it filled (the join of the arrays with pipeline.jobs, once; the probes by id, once
    # for each hint).
    pool = make_pool(db_url, max_size=1, name="one connection")
    try:
        store = JobStore(pool)
        ids = [enqueue(conn, "noop", {}) for _ in range(3)]
        held = store.claim(["noop"], 3, WORKER)
        conn.execute("VACUUM ANALYZE pipeline.job_history")
        for _ in range(15):
            assert store.cancelled([j.fence for j in held]) == set()
        conn.execute(
            "INSERT INTO pipeline.job_history (type, payload, status, claims, finished_at) "
            "SELECT 'noop', '{}', CASE WHEN g % 25 = 0 THEN 'cancelled' ELSE 'done' END, 1, "
            "now() FROM generate_series(1, 5000) AS g"
        )
        assert cancel(conn, ids[0]) and cancel(conn, ids[1])
        hints = [held[0].fence, (ids[1], held[1].claim + 1), held[2].fence]
        notices = explained(pool)
        assert store.cancelled(hints) == {ids[0]}
        plan = "\n".join(notices)
        days = [
            row[0]
            for row in conn.execute(
                "SELECT DISTINCT c.relname FROM pipeline.job_history AS h "
                "JOIN pg_class AS c ON c.oid = h.tableoid"
            )
        ]
        assert days, "the jobs' day holds them"
        for day in days:
            assert re.search(rf"Index Scan using \w+ on {day}\b", plan), plan
            assert f"Seq Scan on {day}" not in plan, plan
        assert "Hash" not in plan, plan
    finally:
        pool.close()


# -- reclaim and retry ----------------------------------------------------------------------------


def test_reclaim_refunds_the_attempt_of_a_job_whose_worker_died(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    victim = enqueue(conn, "noop", {}, max_attempts=1)
    healthy = enqueue(conn, "noop", {})
    store.claim(["noop"], 2, WORKER)
    expire_lease(conn, victim)

    assert Reclaimer(pool).run_once() == [(victim, "noop", "queued")]
    row = job_row(conn, victim)
    assert (row["status"], row["attempts"], row["suspect"], row["crash_reclaims"]) == (
        "queued",
        0,
        True,
        1,
    )
    assert job_row(conn, healthy)["status"] == "running"
    assert Reclaimer(pool).run_once() == []


def test_reclaim_charges_once_the_free_crash_reclaims_are_spent_and_fails_on_the_final_attempt(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    job_id = enqueue(conn, "noop", {}, max_attempts=2)
    conn.execute(
        "UPDATE pipeline.active_jobs SET crash_reclaims = %s WHERE id = %s",
        (FREE_CRASH_RECLAIMS, job_id),
    )
    store.claim(["noop"], 1, WORKER)
    expire_lease(conn, job_id)
    assert Reclaimer(pool).run_once() == [(job_id, "noop", "queued")]
    assert (job_row(conn, job_id)["attempts"], job_row(conn, job_id)["last_error"]) == (
        1,
        "lease expired",
    )
    store.claim(["noop"], 1, WORKER)
    expire_lease(conn, job_id)
    assert Reclaimer(pool).run_once() == [(job_id, "noop", "failed")]
    row = job_row(conn, job_id)
    assert (row["attempts"], row["last_error"]) == (2, "lease expired on final attempt")
    assert row["finished_at"] is not None


def test_a_job_that_always_dies_ends_failed_after_its_free_reclaims_and_max_attempts(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    job_id = enqueue(conn, "noop", {}, max_attempts=3)
    for _ in range(20):
        if not store.claim(["noop"], 1, WORKER):
            break
        expire_lease(conn, job_id)  # the worker died mid-job
        Reclaimer(pool).run_once()
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["max_attempts"]) == ("failed", 3, 3)
    assert row["claims"] == FREE_CRASH_RECLAIMS + 3
    assert store.claim(["noop"], 1, WORKER) == []


def test_retry_later_requeues_after_its_delay(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    job_id = enqueue(conn, "noop", {}, max_attempts=2)
    job = store.claim(["noop"], 1, WORKER)[0]
    assert store.retry_later(job, "upstream 503", 60)
    row = job_row(conn, job_id)
    assert (row["status"], row["last_error"]) == ("queued", "upstream 503")
    delay = conn.execute("SELECT %s::timestamptz - now()", (row["run_after"],)).fetchone()
    assert delay is not None and timedelta(seconds=55) < delay[0] <= timedelta(seconds=60)
    assert store.claim(["noop"], 1, WORKER) == [], "claimed before its backoff ran out"


def test_fail_ends_the_job_whatever_attempts_remain(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    job_id = enqueue(conn, "noop", {}, max_attempts=5)
    job = store.claim(["noop"], 1, WORKER)[0]
    assert store.fail(job, "not a PDF")
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["last_error"]) == ("failed", 1, "not a PDF")
    assert row["finished_at"] is not None


def test_release_is_free_a_few_times_then_charged(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    job_id = enqueue(conn, "noop", {}, max_attempts=1)
    for n in range(FREE_RELEASES):
        job = store.claim(["noop"], 1, WORKER)[0]
        assert store.release([job.fence]) == {job_id: "queued"}
        row = job_row(conn, job_id)
        assert (row["status"], row["attempts"], row["releases"]) == ("queued", 0, n + 1)
    # A job that outlasts every grace period must still end: the next release is charged.
    job = store.claim(["noop"], 1, WORKER)[0]
    assert store.release([job.fence]) == {job_id: "failed"}
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"]) == ("failed", 1)
    assert "released at worker shutdown on its final attempt" in row["last_error"]
