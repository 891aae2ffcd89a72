"""Stages the integration and acceptance tests run, in workers of their own or in subprocesses.

Side effects go to an `effects` table through ctx.on_complete, so they commit with the job's
completion: counting rows counts completions that really landed.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import time
from pathlib import Path
from typing import Any

import psycopg
from pydantic import BaseModel

from pg_pipeline import Context, PermanentError, stage


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


class Chatty(BaseModel):
    lines: int = 2
    line_bytes: int = 20
    fail_times: int = 0


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


@stage("brief", lease=2, heartbeat=0.5)
def brief(job: Nap, ctx: Context) -> None:
    """A short job with a short lease and a plain completion: one the worker acknowledges in
    a batch, and whose lease runs out within seconds if nothing extends it."""
    time.sleep(job.seconds)


@stage("doomed", lease=1, heartbeat=0.3, max_attempts=3, backoff_base=0.05, backoff_cap=0.1)
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


chatter = logging.getLogger("tests.talkative")
chatter.setLevel(logging.INFO)  # kept for the attempt whatever the root logger's level


@stage("talkative", lease=30, max_attempts=3, backoff_base=0.05, backoff_cap=0.1)
def talkative(job: Chatty, ctx: Context) -> None:
    """Logs `lines` lines of about `line_bytes` each, naming the attempt; fails its first
    `fail_times` attempts."""
    for n in range(job.lines):
        chatter.info("attempt %d line %d %s", ctx.attempt, n, "x" * job.line_bytes)
    if ctx.attempt <= job.fail_times:
        raise ConnectionError(f"upstream down on attempt {ctx.attempt}")


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


# -- hostile stages: each tries one way to break the worker's settle path --------------------


class Hostile(BaseModel):
    mode: str


class HostileOut(BaseModel):
    text: str = ""
    score: float = 0.0


@stage("hostile", lease=30, max_attempts=3, backoff_base=0.05, backoff_cap=0.1)
def hostile(job: Hostile, ctx: Context) -> HostileOut | None:
    if job.mode == "nul_output":
        return HostileOut(text="before\x00after")
    if job.mode == "nan_output":
        return HostileOut(score=float("nan"))
    if job.mode == "nul_error":
        raise PermanentError("broken\x00message")
    if job.mode == "big_priority":
        ctx.enqueue("noop", {}, priority=40000)
    elif job.mode == "fan_twice":
        ctx.fan_out("noop", [{}])
        ctx.fan_out("noop", [{}])
    elif job.mode == "step_raises":

        def explode(conn: psycopg.Connection[Any]) -> None:
            raise KeyError("no such thing")

        ctx.on_complete(explode)
    elif job.mode == "step_refused":

        def overflow(conn: psycopg.Connection[Any]) -> None:
            conn.execute("SELECT 40000::smallint")

        ctx.on_complete(overflow)
    elif job.mode == "index_row_too_big":

        def oversized_key(conn: psycopg.Connection[Any]) -> None:
            # Random hex does not compress: far past the 2,704 bytes a btree entry may take.
            conn.execute("CREATE TEMP TABLE keys (k text PRIMARY KEY) ON COMMIT DROP")
            conn.execute(
                "INSERT INTO keys SELECT string_agg(md5(random()::text), '') "
                "FROM generate_series(1, 200)"
            )

        ctx.on_complete(oversized_key)
    elif job.mode == "stack_too_deep":

        def nested(conn: psycopg.Connection[Any]) -> None:
            # A left-deep sum of 100,000 terms: the planner recurses past max_stack_depth.
            conn.execute("SELECT " + "1+" * 100_000 + "1")

        ctx.on_complete(nested)
    elif job.mode == "exit":
        raise SystemExit(3)
    elif job.mode == "long_dedup_key":  # random, so that no compression fits it in an index
        ctx.enqueue("noop", {}, dedup_key=secrets.token_hex(1500))
    elif job.mode == "long_tenant":
        ctx.enqueue("noop", {}, tenant_id=secrets.token_hex(1500))
    elif job.mode == "big_follow_up":
        ctx.enqueue("hostile", {"mode": "x" * 300_000})
    elif job.mode == "big_fan_out":
        ctx.fan_out("hostile", [{"mode": "small"}, {"mode": "x" * 300_000}])
    record_effect(ctx, job.mode)
    return None


@stage("stubborn", lease=30, timeout=0.3, max_attempts=1)
def stubborn(job: Nap, ctx: Context) -> None:
    """Ignores its timeout and lost_lease, like C code that cannot be interrupted."""
    time.sleep(job.seconds)
    record_effect(ctx, "stubborn finished")


@stage("stubborn_child", lease=30, timeout=0.5, max_attempts=1, isolation="process")
def stubborn_child(job: Nap, ctx: Context) -> None:
    """The same, in a child process: the timeout kills it."""
    Path(job.mark).write_text(str(os.getpid()))
    time.sleep(job.seconds)
    record_effect(ctx, "stubborn child finished")


class Count(BaseModel):
    left: int


class Said(BaseModel):
    left: int


@stage("repeat", lease=30)
def repeat(job: Count, ctx: Context) -> Said:
    """Enqueues itself in the same run: every job of the stage stores its own output."""
    if job.left > 0:
        ctx.enqueue("repeat", {"left": job.left - 1})
    return Said(left=job.left)


@stage("spread", lease=30)
def spread(job: Count, ctx: Context) -> None:
    ctx.fan_out("repeat", [{"left": 0} for _ in range(job.left)])


@stage("capped", lease=30, tenant_cap=3, max_attempts=50, backoff_base=0.01, backoff_cap=0.01)
def capped(job: Nothing, ctx: Context) -> None:
    """Three running jobs per tenant at most, across every worker."""
    return None


@stage("capped_nap", lease=30, tenant_cap=2)
def capped_nap(job: Nap, ctx: Context) -> None:
    """Holds its slot a moment, so that claims of one tenant contend for it."""
    time.sleep(job.seconds)
    record_effect(ctx, job.mark)
