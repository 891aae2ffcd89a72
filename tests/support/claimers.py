"""Concurrent claimers for the tests of the claim: threads, each with a pool of its own."""

from __future__ import annotations

import threading
from collections.abc import Callable

from psycopg_pool import ConnectionPool

from pg_pipeline.db import make_pool


def run_claimers(
    db_url: str, count: int, claimer: Callable[[int, ConnectionPool], None], timeout: float = 240
) -> None:
    """Run claimer(i, pool) in `count` threads at once and wait for all of them; each thread's
    pool (two connections) is closed after. Fails if one is still running after `timeout`."""
    pools = [make_pool(db_url, max_size=2, name=f"claimer {i}") for i in range(count)]
    threads = [threading.Thread(target=claimer, args=(i, pools[i])) for i in range(count)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=timeout)
    finally:
        for pool in pools:
            pool.close()
    assert not any(t.is_alive() for t in threads), "a claimer never finished"
