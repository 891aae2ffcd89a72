"""`pipeline worker --log-format json`: the stages' own lines carry their job, in a runner thread
and in the child process of an isolated job, and each retry or failure has one line with the
job's fields."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import psycopg

import tests.support.apps.logging_app as logging_app
from pg_pipeline import enqueue
from tests.acceptance.cli import WorkerProcess
from tests.support.waiting import wait_for

APP = logging_app.__name__


def finished(conn: psycopg.Connection[Any], ids: list[int]) -> bool:
    rows = conn.execute(
        "SELECT count(*) FROM pipeline.jobs WHERE id = ANY(%s) AND status IN ('done', 'failed')",
        (ids,),
    ).fetchone()
    return rows == (len(ids),)


def lines(worker: WorkerProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in worker.log().splitlines() if line.startswith("{")]


def without_time(line: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in line.items() if k not in ("time", "next_run_at")}


def test_json_lines_carry_the_job_in_threads_and_child_processes_and_settlements_say_why(
    conn: psycopg.Connection[Any],
    env: dict[str, str],
    start_worker: Callable[..., WorkerProcess],
) -> None:
    threaded = enqueue(conn, "chatty", {"item": "kettle"}, tenant_id="acme")
    alone = enqueue(conn, "chatty_alone", {"item": "anvil"})
    worker = start_worker("--log-format", "json", environ={**env, "PIPELINE_APP": APP})
    wait_for(lambda: finished(conn, [threaded, alone]), timeout=60, what="both jobs to finish")
    wait_for(
        lambda: sum(line.get("event") == "failed" for line in lines(worker)) == 1,
        what="the child's failure line",
    )
    got = [without_time(line) for line in lines(worker) if line.get("job_id") is not None]
    job = {"job_id": threaded, "stage": "chatty", "tenant": "acme"}
    said = {"level": "INFO", "logger": APP}
    assert {**said, **job, "attempt": 1, "message": "resizing kettle"} in got
    assert {**said, **job, "attempt": 2, "message": "resizing kettle"} in got
    [retried] = [line for line in got if line.get("event") == "retried"]
    assert {k: v for k, v in retried.items() if k not in ("message", "reason")} == {
        "level": "WARNING",
        "logger": "pg_pipeline.jobs",
        **job,
        "attempt": 1,
        "max_attempts": 2,
        "event": "retried",
        "cause": "raised",
    }
    assert retried["reason"].startswith("ConnectionError: upstream down for kettle")
    child = {"job_id": alone, "stage": "chatty_alone", "tenant": None, "attempt": 1}
    assert {**said, **child, "message": "alone with anvil"} in got
    [failed] = [line for line in got if line.get("event") == "failed"]
    assert {k: v for k, v in failed.items() if k not in ("message", "reason")} == {
        "level": "ERROR",
        "logger": "pg_pipeline.jobs",
        **child,
        "max_attempts": 1,
        "event": "failed",
        "cause": "raised",
    }
    assert failed["reason"].startswith("KeyError: 'anvil'")
