"""The history's partitions, made ahead: every worker makes today's partition of
pipeline.job_history and the HISTORY_DAYS_AHEAD days after it, those missing, once an hour;
and, in the same round, deletes the rollups of finished jobs older than ROLLUP_KEEP_S and folds
the shards of those older than an hour into one row each.

Safe in every worker at once: pipeline.make_history_partitions takes an advisory lock, and
each caller finds what the one before it made. A round over days that exist costs a lookup per
day. Days ahead rather than the day itself, because a partition is made under a lock on the
history that waits for the transactions reading it: made days early, that wait never holds up a
job finishing at midnight.
"""

from __future__ import annotations

from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from pg_pipeline.history import (
    HISTORY_DAYS_AHEAD,
    ROLLUP_KEEP_S,
    drop_old_rollups,
    fold_rollup_shards,
    make_partitions,
)

#: Between two rounds, seconds. A week ahead leaves days of slack for a round that fails.
PARTITIONS_INTERVAL_S = 3600.0


@dataclass
class Partitions:
    pool: ConnectionPool
    days_ahead: int = HISTORY_DAYS_AHEAD
    rollup_keep_s: float = ROLLUP_KEEP_S

    def run_once(self) -> int:
        """Make the missing days, drop the old rollups and fold the shards of the last day's;
        returns how many partitions were made."""
        with self.pool.connection() as conn:
            made = make_partitions(conn, self.days_ahead)
            drop_old_rollups(conn, self.rollup_keep_s)
            fold_rollup_shards(conn)
            return made
