"""Settling the server before a measurement: the background work that the step before left
(autovacuum on the tables it wrote, a checkpoint of its dirty buffers) runs before the next
measurement starts, not inside it, where its CPU would be counted as the measured jobs'."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psycopg

#: What runs in the background that a round would pay for: autovacuum workers (with what they
#: work on) and a checkpoint under way (the checkpointer waits on anything but its main loop).
BACKGROUND = """
    SELECT coalesce(string_agg(
               CASE WHEN backend_type = 'checkpointer' THEN 'checkpoint'
                    ELSE left(regexp_replace(query, '\\s+', ' ', 'g'), 90) END, '; '), '')
    FROM pg_stat_activity
    WHERE backend_type = 'autovacuum worker'
       OR (backend_type = 'checkpointer' AND wait_event IS DISTINCT FROM 'CheckpointerMain')
"""


@dataclass
class Settled:
    seconds: float
    seen: list[str]  #: the background work waited for, each once, in the order seen


def settle(server: str, *, quiet_s: float = 2.0, most_s: float = 1800.0) -> Settled:
    """A CHECKPOINT (the dirty buffers of the load or of the round before written now, not
    during the next round), then a wait until no autovacuum worker has run and the checkpointer
    has been idle for `quiet_s`: what autovacuum starts on the tables a round wrote (or the load
    did) runs before the next round, not in it."""
    started = time.perf_counter()
    seen: list[str] = []
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        quiet_since = time.perf_counter()
        while time.perf_counter() - quiet_since < quiet_s:
            if time.perf_counter() - started > most_s:
                raise TimeoutError(f"the server never settled in {most_s:.0f} s: {seen}")
            [(busy,)] = conn.execute(BACKGROUND).fetchall()
            if busy:
                quiet_since = time.perf_counter()
                seen.extend(part for part in str(busy).split("; ") if part not in seen)
            time.sleep(0.1)
    return Settled(time.perf_counter() - started, seen)


def settled_said(settled: Settled) -> str:
    waited = "; ".join(settled.seen) if settled.seen else "nothing running"
    return f"settled in {settled.seconds:.1f} s ({waited})"
