"""Per-tenant caps hold across real worker processes claiming at once."""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg

from pg_pipeline import JobRequest, enqueue_many
from tests.acceptance.cli import WorkerProcess
from tests.support.slots import held_slots
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]


def test_four_workers_never_run_more_than_a_tenants_cap(
    db_url: str, conn: Conn, start_worker: Callable[..., WorkerProcess]
) -> None:
    rng = random.Random(11)
    jobs = [
        JobRequest("capped_nap", {"seconds": rng.uniform(0.005, 0.02), "mark": t}, tenant_id=t)
        for t in ("a", "b", "c", "d", "e")
        for _ in range(120)
    ]
    rng.shuffle(jobs)
    enqueue_many(conn, jobs)
    stop = threading.Event()
    peak: Counter[str] = Counter()

    def sample() -> None:
        with psycopg.connect(db_url, autocommit=True) as watcher:
            while not stop.is_set():
                rows = watcher.execute(
                    "SELECT tenant_id, count(*) FROM pipeline.jobs WHERE status = 'running' "
                    "GROUP BY 1"
                ).fetchall()
                for tenant, n in rows:
                    peak[tenant] = max(peak[tenant], n)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        for _ in range(4):
            start_worker("--stage", "capped_nap", "--concurrency", "4")
        wait_for(
            lambda: (
                conn.execute("SELECT count(*) FROM pipeline.jobs WHERE status = 'done'").fetchone()
                == (600,)
            ),
            timeout=120,
            what="600 capped jobs done",
        )
    finally:
        stop.set()
        sampler.join(timeout=30)
    assert max(peak.values()) == 2, f"the cap was never reached: {peak}"
    assert all(n <= 2 for n in peak.values()), peak
    assert conn.execute("SELECT count(*) FROM effects").fetchone() == (600,)
    assert set(held_slots(conn).values()) == {0}
