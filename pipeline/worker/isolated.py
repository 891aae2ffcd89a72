"""A job run alone in a child process: a crash there is the job's own, and a timeout or a
cancel kills the child instead of abandoning a thread.

The child does what a runner thread does (run, decide, complete) with its own connection, so
outputs, follow-ups and on_complete steps commit in the child's fenced transaction; the parent
keeps the lease alive meanwhile. If the child dies, the parent charges the job for the crash.
"""

from __future__ import annotations

import importlib
import threading
import time
from typing import Any

from pipeline.context import Context
from pipeline.db import make_pool
from pipeline.executor import run_job
from pipeline.outcomes import decide
from pipeline.runs import job_output, run_outputs
from pipeline.stage import REGISTRY
from pipeline.store import ClaimedJob, JobStore
from pipeline.worker.completer import Completer, Settled

CHILD_RETRY_MAX_S = 2.0  #: longest wait between reconnects inside the child


def run_alone(dsn: str, module: str, stage_name: str, job: ClaimedJob) -> Settled:
    """The child's entry point (by reference, through the fork server): returns what the
    database confirmed for the job."""
    importlib.import_module(module)
    spec = REGISTRY.get(stage_name)
    pool = make_pool(dsn, max_size=2, name="pg-pipeline isolated job")
    try:

        def read_outputs(root_id: int, stage: str) -> list[tuple[int | None, Any]]:
            with pool.connection() as conn:
                return run_outputs(conn, root_id, stage)

        def read_job_output(job_id: int) -> Any:
            with pool.connection() as conn:
                return job_output(conn, job_id)

        ctx = Context.for_job(job, REGISTRY, read_outputs)
        outcome = run_job(spec, job, ctx, read_job_output)
        completer = Completer(
            JobStore(pool),
            halt=threading.Event(),
            retry_max_s=CHILD_RETRY_MAX_S,
            batch_max=1,
            on_settled=lambda _job, _settled: None,
        )
        transition = decide(spec, job, outcome)
        return completer.apply_now(job, transition, until=time.monotonic() + job.lease_seconds)
    finally:
        pool.close()
