"""Stages written as `async def`: run on the worker's event loop, overlapping while they await,
with the same outputs, follow-ups, timeouts and logging context as a sync stage."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import psycopg
from pydantic import BaseModel

from pg_pipeline import Context, WorkerSettings
from pg_pipeline.enqueue import enqueue
from pg_pipeline.logs import current_job
from pg_pipeline.runs import run_output
from pg_pipeline.stage import Registry, stage
from pg_pipeline.testing import drain
from tests.integration.workers import running_worker
from tests.support.waiting import wait_for

REG = Registry()
TOGETHER = 4


class Page(BaseModel):
    n: int


class Read(BaseModel):
    n: int
    text: str


waiting_together: list[int] = []
loops: set[int] = set()
cancelled_at_await = threading.Event()
seen_jobs: list[int | None] = []


@stage("fetch", registry=REG, then="store")
async def fetch(job: Page, ctx: Context) -> Read:
    await asyncio.sleep(0)
    return Read(n=job.n, text=f"page {job.n}")


@stage("store", registry=REG)
async def store(job: Read, ctx: Context) -> Read:
    return job


@stage("gather", registry=REG)
async def gather(job: Page, ctx: Context) -> None:
    """Finishes only once TOGETHER jobs wait on the loop at the same time: run one after the
    other, the first would wait for the others for ever (and time out)."""
    waiting_together.append(job.n)
    loops.add(id(asyncio.get_running_loop()))
    async with asyncio.timeout(20):
        while len(waiting_together) < TOGETHER:
            await asyncio.sleep(0.01)


@stage("hang", registry=REG, timeout=0.5, max_attempts=1)
async def hang(job: Page, ctx: Context) -> None:
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        cancelled_at_await.set()
        raise


@stage("whose", registry=REG)
async def whose(job: Page, ctx: Context) -> None:
    job_fields = current_job()
    seen_jobs.append(None if job_fields is None else job_fields.job_id)


def statuses(conn: psycopg.Connection[Any], stage_name: str) -> list[tuple[str, str | None]]:
    return conn.execute(
        "SELECT status, last_error FROM pipeline.jobs WHERE type = %s ORDER BY id", (stage_name,)
    ).fetchall()


def test_an_async_stage_stores_its_output_feeds_its_then_and_runs_in_its_jobs_context(
    db_url: str, conn: psycopg.Connection[Any]
) -> None:
    run_id = enqueue(conn, "fetch", {"n": 3}, registry=REG)
    whose_id = enqueue(conn, "whose", {"n": 0}, registry=REG)
    drained = drain(db_url, registry=REG)
    assert drained.ok and len(drained.done) == 3
    assert run_output(conn, run_id, "store") == {"n": 3, "text": "page 3"}
    # The job's fields are what its log records carry (pg_pipeline.logs): the coroutine runs on
    # the loop's thread, in a copy of the runner's context.
    assert seen_jobs == [whose_id]


def test_async_stages_wait_together_on_the_loop_and_a_timeout_cancels_the_await(
    db_url: str, conn: psycopg.Connection[Any]
) -> None:
    gathered = [enqueue(conn, "gather", {"n": n}, registry=REG) for n in range(TOGETHER)]
    hung = enqueue(conn, "hang", {"n": 0}, registry=REG)
    settings = WorkerSettings(concurrency=TOGETHER + 2, poll_interval_s=0.1)
    with running_worker(db_url, ["gather", "hang"], settings, registry=REG):
        wait_for(
            lambda: all(
                status != "running" and status != "queued"
                for status, _ in statuses(conn, "gather") + statuses(conn, "hang")
            ),
            timeout=60,
            what="the async jobs to settle",
        )
    assert statuses(conn, "gather") == [("done", None)] * TOGETHER, gathered
    assert len(loops) == 1, "the worker's async stages ran on more than one loop"
    [(status, error)] = statuses(conn, "hang")
    assert status == "failed" and error is not None and "timed out" in error, hung
    assert cancelled_at_await.wait(5), "the timed-out task was not cancelled at its await"
