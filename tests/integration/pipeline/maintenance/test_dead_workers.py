"""DeadWorkerPruner, driven directly: the rows of workers that stopped beating go, the rest stay."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pg_pipeline.maintenance import DeadWorkerPruner
from pg_pipeline.store import JobStore, WorkerInfo

Conn = psycopg.Connection[Any]
LIVE = WorkerInfo(uuid.UUID(int=1), ["noop"], 4)
DEAD = WorkerInfo(uuid.UUID(int=2), ["noop"], 4)


def worker_ids(conn: Conn) -> set[uuid.UUID]:
    return {row[0] for row in conn.execute("SELECT id FROM pipeline.workers")}


def test_the_rows_of_workers_silent_past_the_cutoff_are_pruned_and_live_ones_kept(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    store.register_worker(LIVE)
    store.register_worker(DEAD)
    conn.execute(
        "UPDATE pipeline.workers SET last_seen = now() - interval '11 minutes' WHERE id = %s",
        (DEAD.id,),
    )
    pruner = DeadWorkerPruner(pool, after_s=600)
    assert pruner.run_once() == 1
    assert worker_ids(conn) == {LIVE.id}
    assert pruner.run_once() == 0, "a second pass found another dead worker"
