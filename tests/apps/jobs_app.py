"""Stages the integration and acceptance tests run, in workers of their own or in subprocesses.

Side effects go to an `effects` table through ctx.on_complete, so they commit with the job's
completion: counting rows counts completions that really landed.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import psycopg
from pydantic import BaseModel

from pipeline import Context, PermanentError, stage


class Nothing(BaseModel):
    n: int = 0


class Nap(BaseModel):
    seconds: float
    mark: str = ""


class Doomed(BaseModel):
    runs_file: str


class Flaky(BaseModel):
    fail_times: int
    permanent: bool = False


def record_effect(ctx: Context, note: str) -> None:
    def insert(conn: psycopg.Connection[Any]) -> None:
        conn.execute(
            "INSERT INTO effects (job_id, attempt, pid, note) VALUES (%s, %s, %s, %s)",
            (ctx.job_id, ctx.attempt, os.getpid(), note),
        )

    ctx.on_complete(insert)


EFFECTS_DDL = """
CREATE TABLE IF NOT EXISTS effects (
    job_id bigint NOT NULL, attempt int NOT NULL, pid int NOT NULL, note text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
)
"""


@stage("noop", lease=30)
def noop(job: Nothing, ctx: Context) -> None:
    return None


@stage("effect", lease=30)
def effect(job: Nothing, ctx: Context) -> None:
    record_effect(ctx, f"n={job.n}")


@stage("nap", lease=2, heartbeat=0.5, max_attempts=5)
def nap(job: Nap, ctx: Context) -> None:
    """Sleeps like a slow OCR call would, then records its effect in the completing commit."""
    time.sleep(job.seconds)
    record_effect(ctx, job.mark)


@stage("doomed", lease=1, heartbeat=0.3, max_attempts=3)
def doomed(job: Doomed, ctx: Context) -> None:
    """Kills its own worker, like a PDF that crashes the renderer every time."""
    with Path(job.runs_file).open("a") as runs:
        runs.write(f"{ctx.attempt}\n")
    os.kill(os.getpid(), signal.SIGKILL)


@stage("flaky", lease=30, max_attempts=4, backoff_base=0.05, backoff_cap=0.2)
def flaky(job: Flaky, ctx: Context) -> None:
    if ctx.attempt <= job.fail_times:
        if job.permanent:
            raise PermanentError(f"bad input on attempt {ctx.attempt}")
        raise ConnectionError(f"upstream down on attempt {ctx.attempt}")
    record_effect(ctx, "ok")


@stage("slowpoke", lease=30, timeout=0.3, max_attempts=2, backoff_base=0.05, backoff_cap=0.1)
def slowpoke(job: Nap, ctx: Context) -> None:
    """Overruns its timeout; it watches lost_lease the way a long stage should."""
    ctx.lost_lease.wait(job.seconds)
    ctx.check_lease()
    record_effect(ctx, "finished")


@stage("chain", lease=30)
def chain(job: Nothing, ctx: Context) -> None:
    if job.n > 0:
        ctx.enqueue("chain", {"n": job.n - 1})
    record_effect(ctx, f"chain {job.n}")


@stage("waiter", lease=30)
def waiter(job: Nap, ctx: Context) -> None:
    """Blocks until told it lost the job (cancel, shutdown) or its time is up."""
    ctx.lost_lease.wait(job.seconds)
    ctx.check_lease()
    record_effect(ctx, job.mark)
