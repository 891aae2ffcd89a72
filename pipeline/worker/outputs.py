"""The worker's reads of stored outputs: a job's own (did an earlier run of this very job commit
its work? then it is not run again) and a run's outputs of a stage (ctx.outputs); and of what
its waits came to (ctx.wait_for)."""

from __future__ import annotations

import threading
import time
from typing import Any

from psycopg_pool import ConnectionPool

from pg_pipeline.errors import DatabaseUnavailable
from pg_pipeline.reconnecting import retry_db
from pg_pipeline.runs import job_output, run_outputs
from pg_pipeline.waits import WaitRecord, read_wait

#: how long a job waits out an outage to learn whether it already ran, before its run starts
JOB_OUTPUT_WAIT_S = 30.0


class Outputs:
    def __init__(self, pool: ConnectionPool, *, halt: threading.Event, retry_max_s: float) -> None:
        self.pool = pool
        self._halt = halt
        self._retry_max_s = retry_max_s

    def job_output(self, job_id: int) -> Any:
        """The output this job stored on an earlier run, as JSON, or None. Rides out a short
        outage; past it, raises DatabaseUnavailable, and the executor leaves the job unrun."""

        def read() -> list[Any]:
            with self.pool.connection() as conn:
                return [job_output(conn, job_id)]

        found = retry_db(
            f"look up job {job_id}'s output",
            read,
            halt=self._halt,
            max_delay_s=self._retry_max_s,
            until=time.monotonic() + JOB_OUTPUT_WAIT_S,
        )
        if found is None:
            raise DatabaseUnavailable(f"job {job_id}: cannot tell whether it already ran")
        return found[0]

    def run_outputs(
        self,
        root_id: int,
        stage: str,
        generation: int | None = None,
        version: str | None = None,
    ) -> list[tuple[int | None, Any]]:
        """The run's outputs of `stage`, by part, of one generation (pg_pipeline.runs)."""
        with self.pool.connection() as conn:
            return run_outputs(conn, root_id, stage, generation, version)

    def read_wait(self, job_id: int, name: str) -> WaitRecord | None:
        """The job's wait of that name, as recorded; None when it never waited on it."""
        with self.pool.connection() as conn:
            return read_wait(conn, job_id, name)
