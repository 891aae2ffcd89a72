"""Pruning of dead workers' rows: a worker that died unannounced (SIGKILL, a lost machine) leaves
its row in pipeline.workers; its jobs come back through reclaim, its row through this."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from pg_pipeline.queries import Q


@dataclass
class DeadWorkerPruner:
    """Deletes the rows of workers that stopped beating more than `after_s` seconds ago."""

    pool: ConnectionPool
    after_s: float

    def run_once(self) -> int:
        with self.pool.connection() as conn:
            return len(conn.execute(Q["prune_workers"], {"after_s": self.after_s}).fetchall())
