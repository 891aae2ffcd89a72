"""Stages the chaos tests (tests/chaos/) run in real `pipeline worker` processes.

Every run of `chaos_sleep` that completes writes its side effect through ctx.on_complete, so
it commits with the job's completion or not at all. The effect row is keyed by job: a second
completion of the same job does not fail on the constraint, it bumps `writes`, so a duplicate
is counted instead of hidden. Each worker process is told its name in CHAOS_WORKER (a child
process that runs a suspect job inherits it), so an effect names the worker that produced it.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import psycopg
from pydantic import BaseModel

from pg_pipeline import Context, stage

#: the environment variable naming the worker process (tests/chaos/fleet.py sets it)
WORKER_ENV = "CHAOS_WORKER"

CHAOS_EFFECTS_DDL = """
CREATE TABLE IF NOT EXISTS chaos_effects (
    job_id  bigint      NOT NULL,
    attempt int         NOT NULL,
    pid     int         NOT NULL,
    worker  text        NOT NULL,
    writes  int         NOT NULL DEFAULT 1,
    at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT chaos_effects_one_per_job UNIQUE (job_id)
)
"""


class Sleep(BaseModel):
    ms: int = 0
    #: a worker of this name sleeps slow_ms instead (to hold jobs long enough to be paused)
    slow_worker: str = ""
    slow_ms: int = 0


class Slept(BaseModel):
    attempt: int
    pid: int
    worker: str


class Poison(BaseModel):
    n: int = 0


def record_effect(ctx: Context) -> None:
    worker = os.environ.get(WORKER_ENV, "")
    row = (ctx.job_id, ctx.attempt, os.getpid(), worker)

    def insert(conn: psycopg.Connection[Any]) -> None:
        conn.execute(
            "INSERT INTO chaos_effects (job_id, attempt, pid, worker) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (job_id) DO UPDATE SET writes = chaos_effects.writes + 1",
            row,
        )

    ctx.on_complete(insert)


@stage("chaos_sleep", lease=2, heartbeat=0.5, max_attempts=5, backoff_base=0.05, backoff_cap=0.2)
def chaos_sleep(job: Sleep, ctx: Context) -> Slept:
    """Sleeps like a short I/O call, then records its effect and returns an output."""
    slow = job.slow_worker != "" and os.environ.get(WORKER_ENV) == job.slow_worker
    time.sleep((job.slow_ms if slow else job.ms) / 1000)
    record_effect(ctx)
    return Slept(attempt=ctx.attempt, pid=os.getpid(), worker=os.environ.get(WORKER_ENV, ""))


@stage("chaos_ack", lease=2, heartbeat=0.5, max_attempts=5, backoff_base=0.05, backoff_cap=0.2)
def chaos_ack(job: Sleep, ctx: Context) -> None:
    """Sleeps, and returns nothing: a plain completion, which its worker writes in a batch of
    acknowledgements (so it leaves no effect row: its job's `claims` tells whether it re-ran)."""
    time.sleep(job.ms / 1000)


@stage("chaos_poison", lease=2, heartbeat=0.5, max_attempts=3, backoff_base=0.05, backoff_cap=0.2)
def chaos_poison(job: Poison, ctx: Context) -> None:
    """Kills the process it runs in, every time: a document that crashes its renderer."""
    os.kill(os.getpid(), signal.SIGKILL)


class Go(BaseModel):
    token: int


class Went(BaseModel):
    token: int
    attempt: int
    worker: str


@stage("chaos_wait", lease=2, heartbeat=0.5, max_attempts=5, backoff_base=0.05, backoff_cap=0.2)
def chaos_wait(job: Sleep, ctx: Context) -> Went:
    """Works a moment, waits for a signal (tests/chaos/test_waits.py), works a moment more, and
    records its effect with the token the signal carried."""
    time.sleep(job.ms / 1000)  # before the wait: runs again when the job resumes
    go = ctx.wait_for("go", Go, timeout=600)
    time.sleep(job.ms / 1000)
    record_effect(ctx)
    return Went(token=go.token, attempt=ctx.attempt, worker=os.environ.get(WORKER_ENV, ""))
