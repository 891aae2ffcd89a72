"""Concurrent claimers for the tests of the claim: threads, each with a pool of its own."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pg_pipeline.db import make_pool
from pg_pipeline.queries import Q

#: the worker an open transaction's claim is made for
HOLDER = uuid.UUID(int=2)


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


def claim_in_open_transaction(
    db_url: str,
    limit: int,
    turns: int | str | None = None,
    *,
    types: Sequence[str] = ("noop",),
    caps: Mapping[str, int] | None = None,
) -> tuple[psycopg.Connection[Any], list[int]]:
    """A connection whose claim of `limit` jobs of `types` (with the worker's default `caps` by
    stage) is left uncommitted, holding what a claim holds until its commit, with
    pg_pipeline.claim_turns set to `turns` for its session; and the ids it took."""
    options = {} if turns is None else {"options": f"-c pg_pipeline.claim_turns={turns}"}
    holder = psycopg.connect(db_url, **options)
    cap_stages = sorted(caps or {})
    rows = holder.execute(
        Q["claim"],
        {
            "types": list(types),
            "limit": limit,
            "worker_id": HOLDER,
            "cap_stages": cap_stages,
            "caps": [(caps or {})[stage] for stage in cap_stages],
        },
    ).fetchall()
    return holder, [row[0] for row in rows]
