"""Cancelling a run as a tree: every queued and running job of it, in one transaction."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import WorkerSettings, enqueue
from pg_pipeline.admin.runs import cancel_tree, read_run
from pg_pipeline.context import Context
from pg_pipeline.stage import REGISTRY
from pg_pipeline.store import JobStore
from tests.integration import workers
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
SLOTS = WorkerSettings(concurrency=4, poll_interval_s=0.2, reclaim_interval_s=0.5, grace_period_s=5)


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(EFFECTS_DDL)
        yield c


def fan_out(conn: Conn, pool: ConnectionPool, children: int, tenant: str | None = None) -> int:
    """A root that fans out `children` waiters (each waits up to a minute unless told it lost
    its job), then a noop; the root is done."""
    root = enqueue(conn, "noop", {"n": 0}, tenant_id=tenant)
    store = JobStore(pool)
    [claimed] = store.claim(["noop"], 1, uuid.UUID(int=1))
    ctx = Context(
        job_id=root,
        stage="noop",
        attempt=1,
        max_attempts=1,
        tenant_id=tenant,
        parent_id=None,
        registry=REGISTRY,
    )
    waits = [{"seconds": 60, "mark": f"w{i}"} for i in range(children)]
    ctx.fan_out("waiter", waits, then=("noop", {"n": 1}))
    store.complete_with(claimed, ctx.transaction_steps)
    return root


def statuses(conn: Conn, root: int) -> dict[str, int]:
    rows = conn.execute(
        "SELECT status, count(*) FROM pipeline.jobs WHERE root_id = %s GROUP BY 1", (root,)
    ).fetchall()
    return {str(s): int(n) for s, n in rows}


def test_cancelling_a_fan_out_of_100_in_flight_stops_every_job_and_the_run(
    db_url: str,
    conn: Conn,
    pool: ConnectionPool,
) -> None:
    root = fan_out(conn, pool, 100)
    with workers.running_worker(db_url, ["waiter", "noop"], SLOTS):
        wait_for(lambda: statuses(conn, root).get("running") == 4, what="four waiters running")
        running = {
            row[0]
            for row in conn.execute(
                "SELECT id FROM pipeline.active_jobs WHERE root_id = %s AND status = 'running'",
                (root,),
            ).fetchall()
        }

        cancelled = cancel_tree(conn, root, None, reason="operator stopped it")

        assert cancelled is not None and len(cancelled) == 100
        assert running <= set(cancelled)
        assert statuses(conn, root) == {"cancelled": 100}
        # Four slots: a new job can only run once the four running stages heard of the cancel
        # and let their slots go.
        after = enqueue(conn, "waiter", {"seconds": 0, "mark": "after"})
        wait_for(
            lambda: (
                conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (after,)).fetchone()
                == ("done",)
            ),
            what="a job after the cancel",
        )
    # No waiter of the run wrote anything, none ran again, and the join enqueued no next stage.
    assert conn.execute("SELECT note FROM effects").fetchall() == [("after",)]
    assert statuses(conn, root) == {"cancelled": 100}
    assert conn.execute(
        "SELECT failed, then_job_id FROM pipeline.joins WHERE id = %s", (root,)
    ).fetchone() == (100, None)
    assert conn.execute(
        "SELECT status, active, done, cancelled FROM pipeline.runs WHERE run_id = %s", (root,)
    ).fetchone() == ("cancelled", 0, 1, 100)
    run = read_run(conn, root, None)
    assert run is not None and run.status == "cancelled"
    assert [(b.stage, b.after, b.failed) for b in run.blocked_steps] == [("noop", root, 100)]


def test_a_run_of_another_tenant_is_not_cancelled(conn: Conn, pool: ConnectionPool) -> None:
    root = fan_out(conn, pool, 3, tenant="acme")
    assert cancel_tree(conn, root, "globex") is None
    assert statuses(conn, root) == {"queued": 3}
    assert cancel_tree(conn, root, "acme") is not None
    assert statuses(conn, root) == {"cancelled": 3}
    # Nothing left to cancel: an empty list, not an error.
    assert cancel_tree(conn, root, "acme") == []


def test_cancelling_a_job_inside_a_run_cancels_what_it_led_to_and_no_sibling(
    conn: Conn, pool: ConnectionPool
) -> None:
    root = fan_out(conn, pool, 3)
    first, second, third = (
        row[0]
        for row in conn.execute(
            "SELECT id FROM pipeline.active_jobs WHERE root_id = %s ORDER BY id", (root,)
        ).fetchall()
    )
    # What the second page led to: a child, and that child's child (one finished already).
    [(child,)] = conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload, parent_id, root_id)"
        " VALUES ('noop', '{\"n\": 2}', %s, %s) RETURNING id",
        (second, root),
    ).fetchall()
    [(grandchild,)] = conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload, parent_id, root_id)"
        " VALUES ('noop', '{\"n\": 3}', %s, %s) RETURNING id",
        (child, root),
    ).fetchall()

    assert cancel_tree(conn, second, None) == [second, child, grandchild]

    rows = conn.execute(
        "SELECT id, status FROM pipeline.jobs WHERE root_id = %s ORDER BY id", (root,)
    ).fetchall()
    assert rows == [
        (first, "queued"),
        (second, "cancelled"),
        (third, "queued"),
        (child, "cancelled"),
        (grandchild, "cancelled"),
    ]
    assert conn.execute(
        "SELECT status, active, cancelled FROM pipeline.runs WHERE run_id = %s", (root,)
    ).fetchone() == ("cancelled", 2, 3)
