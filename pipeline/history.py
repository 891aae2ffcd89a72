"""The history's daily partitions (pipeline.job_history, one partition per UTC day), made
ahead of the days jobs finish in, and made on the spot by a finishing write that found none;
and the end of the per-minute rollups of finished jobs, which the status views read.

There is no default partition (see sql/functions/make_history_partitions.sql), so a job that
finishes on a day without a partition makes its write fail with SQLSTATE 23514 (check_violation:
"no partition of relation ... found for row"). migrate() and the worker's Partitions service
keep HISTORY_DAYS_AHEAD days ahead, so that is rare: a database whose workers all stopped for
longer. healing() then makes the days and runs the write once more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg.pq import TransactionStatus

from pg_pipeline.queries import Q

#: Days of partitions made ahead of today, today not counted.
HISTORY_DAYS_AHEAD = 7
#: Seconds the per-minute rollups of finished jobs are kept (pipeline.finished_by_minute): the
#: status views read the last 24 hours; a day more leaves a late reader, and a clock that
#: stepped back, whole windows. The rollups' delete trigger counts nothing older than this
#: (sql/functions/roll_up_finished.sql says "2 days" too).
ROLLUP_KEEP_S = 2 * 86_400.0

T = TypeVar("T")


def make_partitions(conn: psycopg.Connection[Any], days_ahead: int = HISTORY_DAYS_AHEAD) -> int:
    """Make today's partition and the days_ahead days after it, those missing (UTC, by the
    database's clock); returns how many were made."""
    row = conn.execute(Q["make_history_partitions"], {"days_ahead": days_ahead}).fetchone()
    return int(row[0]) if row else 0


def drop_old_rollups(conn: psycopg.Connection[Any], keep_s: float = ROLLUP_KEEP_S) -> int:
    """Delete the rollups of minutes older than keep_s; returns how many rows went."""
    row = conn.execute(Q["rollups_drop_old"], {"keep_s": keep_s}).fetchone()
    return int(row[0]) if row else 0


def fold_rollup_shards(conn: psycopg.Connection[Any]) -> int:
    """Fold the shards of rollup minutes older than an hour into one row each, so that a day's
    read sums a row per minute, stage and outcome however many backends finished jobs; returns
    how many shard rows were folded away."""
    row = conn.execute(Q["rollups_fold_shards"]).fetchone()
    return int(row[0]) if row else 0


def healing(conn: psycopg.Connection[Any], write: Callable[[], T]) -> T:
    """write(), a finishing write on `conn` (autocommit, its own transaction if any); should it
    fail on a check violation, the days' partitions are made and it runs once more. Any 23514
    does: making partitions that exist is a no-op, and a violation of another kind comes back
    from the second run. Inside a caller's transaction, which the failure aborted, nothing can
    run again: the error goes to the caller.

    The days are made in a transaction of their own that waits for their locks as long as the
    session's configured lock timeout says (no limit by default), not as long as this session
    set: the acknowledger's connection holds 50 ms for its session (pipeline/store.py,
    hold_ack_settings), and a reader of the history holds a lock that making a day waits for."""
    try:
        return write()
    except psycopg.errors.CheckViolation:
        if conn.info.transaction_status != TransactionStatus.IDLE:
            raise
    with conn.transaction():
        conn.execute(Q["lock_timeout_as_configured"])
        make_partitions(conn)
    return write()
