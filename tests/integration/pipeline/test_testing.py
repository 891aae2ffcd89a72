"""pg_pipeline.testing.drain runs an application's stages to the end against a real database, in
the calling thread: follow-ups are run, a retry runs again at once (its backoff of an hour is not
waited for), a permanent failure is reported with its error, and a run's left-over jobs are
counted when retries keep their backoff."""

from __future__ import annotations

import time
from typing import Any

import psycopg
from pydantic import BaseModel

from pg_pipeline import Context
from pg_pipeline.enqueue import enqueue
from pg_pipeline.stage import Registry, stage
from pg_pipeline.testing import drain

REG = Registry()
HOUR_S = 3600.0


class Order(BaseModel):
    item: str


@stage("order", registry=REG)
def order(job: Order, ctx: Context) -> None:
    ctx.enqueue("ship", {"item": job.item})


@stage("ship", registry=REG, max_attempts=3, backoff_base=HOUR_S, backoff_cap=HOUR_S)
def ship(job: Order, ctx: Context) -> None:
    if ctx.attempt == 1:
        raise ConnectionError(f"carrier down for {job.item}")
    if job.item == "anvil":
        raise ValueError("anvils do not ship")


def job_ids(conn: psycopg.Connection[Any], run_id: int) -> dict[str, int]:
    rows = conn.execute(
        "SELECT type, id FROM pipeline.jobs WHERE coalesce(root_id, id) = %s", (run_id,)
    ).fetchall()
    return {stage: job_id for stage, job_id in rows}


def statuses(conn: psycopg.Connection[Any], run_id: int) -> dict[str, str]:
    rows = conn.execute(
        "SELECT type, status FROM pipeline.jobs WHERE coalesce(root_id, id) = %s", (run_id,)
    ).fetchall()
    return {stage: status for stage, status in rows}


def test_a_run_is_drained_with_its_follow_ups_and_a_retry_that_does_not_wait_its_backoff(
    db_url: str, conn: psycopg.Connection[Any]
) -> None:
    run_id = enqueue(conn, "order", {"item": "kettle"}, registry=REG)
    started = time.monotonic()
    drained = drain(db_url, registry=REG, run_id=run_id)
    assert time.monotonic() - started < HOUR_S / 60, "the drain waited out the backoff"
    ids = job_ids(conn, run_id)
    assert drained.done == [ids["order"], ids["ship"]]
    assert drained.retried == [ids["ship"]] and drained.failed == {}
    assert drained.left == 0 and drained.ok
    assert statuses(conn, run_id) == {"order": "done", "ship": "done"}


def test_a_failure_for_good_is_reported_with_its_error_and_the_drain_takes_a_connection(
    conn: psycopg.Connection[Any],
) -> None:
    run_id = enqueue(conn, "order", {"item": "anvil"}, registry=REG)
    drained = drain(conn, registry=REG, run_id=run_id)
    ship_id = job_ids(conn, run_id)["ship"]
    assert list(drained.failed) == [ship_id] and not drained.ok
    assert drained.failed[ship_id].startswith("ValueError: anvils do not ship")
    assert statuses(conn, run_id) == {"order": "done", "ship": "failed"}


def test_without_retry_now_a_retried_job_keeps_its_backoff_and_is_left_in_the_run(
    db_url: str, conn: psycopg.Connection[Any]
) -> None:
    run_id = enqueue(conn, "order", {"item": "kettle"}, registry=REG)
    drained = drain(db_url, registry=REG, run_id=run_id, retry_now=False)
    ids = job_ids(conn, run_id)
    assert drained.done == [ids["order"]] and drained.retried == [ids["ship"]]
    assert drained.left == 1 and not drained.ok
    assert statuses(conn, run_id) == {"order": "done", "ship": "queued"}


def test_without_a_run_the_whole_queue_of_the_stages_is_drained(
    db_url: str, conn: psycopg.Connection[Any]
) -> None:
    runs = [enqueue(conn, "order", {"item": item}, registry=REG) for item in ("cup", "pot")]
    drained = drain(db_url, registry=REG)
    assert len(drained.done) == 4 and drained.left is None
    assert all(statuses(conn, r) == {"order": "done", "ship": "done"} for r in runs)
