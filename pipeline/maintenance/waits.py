"""Wait timeouts: open waits past their deadline resolved as timed out, their jobs queued to run
again and meet WaitTimedOut at their wait (pg_pipeline.waits)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from pg_pipeline.queries import Q

log = logging.getLogger(__name__)

#: Due waits resolved per statement.
TIMEOUT_BATCH = 500
#: Seconds between two rounds: a round is an index probe of the open waits when none is due, so
#: a wait's job resumes within a few seconds of its deadline.
WAIT_TIMEOUT_INTERVAL_S = 5.0


@dataclass
class WaitTimeouts:
    """Every worker runs one. Each batch is one statement that locks the due waits' jobs SKIP
    LOCKED and resolves a wait only while it is open, so concurrent rounds, and a signal or a
    cancel racing one, resolve each wait once."""

    pool: ConnectionPool

    def run_once(self) -> list[tuple[int, str, str]]:
        """(job id, stage, wait name) of the waits timed out now."""
        timed_out: list[tuple[int, str, str]] = []
        with self.pool.connection() as conn:
            while True:
                rows = conn.execute(Q["time_out_waits"], {"limit": TIMEOUT_BATCH}).fetchall()
                timed_out.extend((row[0], row[1], row[2]) for row in rows)
                if len(rows) < TIMEOUT_BATCH:
                    break
        for job_id, stage, name in timed_out:
            log.info("job %s (%s): its wait %r timed out; it runs again", job_id, stage, name)
        return timed_out
