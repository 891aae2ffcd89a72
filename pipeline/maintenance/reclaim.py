"""Reclaim: expired leases back to the queue, or failed on their final attempt."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from pg_pipeline.queries import Q
from pg_pipeline.store import reclaim_expired

log = logging.getLogger(__name__)

RECLAIM_BATCH = 1000  #: expired leases handled per statement


@dataclass
class Reclaimer:
    """Expired leases back to the queue while attempts remain; failed on the final attempt.
    Every worker runs one; SKIP LOCKED makes concurrent passes harmless."""

    pool: ConnectionPool

    def run_once(self) -> list[tuple[int, str, str]]:
        reclaimed: list[tuple[int, str, str]] = []
        with self.pool.connection() as conn:
            while True:
                batch = reclaim_expired(conn, RECLAIM_BATCH)
                reclaimed.extend(batch)
                if len(batch) < RECLAIM_BATCH:
                    break
            requeued = sorted({t for _, t, status in reclaimed if status == "queued"})
            if requeued:
                conn.execute(Q["notify_ready"], {"types": requeued})
        for job_id, job_type, status in reclaimed:
            log.warning(
                "reclaimed job %s (%s) after its lease expired: now %s", job_id, job_type, status
            )
        return reclaimed
