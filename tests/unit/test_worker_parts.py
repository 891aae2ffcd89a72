"""The worker's parts on their own: runners, the in-flight table, the executor's guards."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
from pydantic import BaseModel

from pipeline import Context
from pipeline.executor import run_job
from pipeline.outcomes import Lost
from pipeline.stage import Registry, stage
from pipeline.store import ClaimedJob
from pipeline.worker.inflight import InFlight, InFlightTable
from pipeline.worker.runners import Runners
from tests.waiting import wait_for

REG = Registry()
CALLS: list[int] = []


class In(BaseModel):
    n: int = 0


class Out(BaseModel):
    n: int


@stage("counted", registry=REG)
def counted(job: In, ctx: Context) -> Out:
    CALLS.append(job.n)
    return Out(n=job.n)


def claimed(job_id: int) -> ClaimedJob:
    return ClaimedJob(job_id, "counted", None, {"n": job_id}, 0, 1, 5, 60, None, job_id)


def entry(job_id: int) -> InFlight:
    job = claimed(job_id)
    ctx = Context.for_job(job, REG, None)
    return InFlight(job, REG.get("counted"), ctx, deadline=None, isolated=False)


def test_an_outage_before_the_run_gives_the_claim_up_without_running_the_stage() -> None:
    def unreachable(job_id: int) -> Any:
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    CALLS.clear()
    job = claimed(3)
    outcome = run_job(REG.get("counted"), job, Context.for_job(job, REG, None), unreachable)
    assert isinstance(outcome, Lost) and "database unavailable" in outcome.reason
    assert CALLS == []


def test_a_runner_that_fails_lets_go_of_the_job_and_keeps_serving() -> None:
    table = InFlightTable(2, threading.Event())
    let_go: list[int] = []
    done: list[int] = []

    def execute(e: InFlight) -> None:
        if e.job.id == 1:
            raise RuntimeError("a bug in the worker")
        done.append(e.job.id)
        table.finish_run(e)

    def on_error(e: InFlight) -> None:
        let_go.append(e.job.id)
        table.finish_run(e)
        table.forget(e)

    runners = Runners(execute, on_error=on_error, count=1, max_abandoned=4, on_too_many=print)
    runners.start()
    for job_id in (1, 2):
        e = entry(job_id)
        table.add(e)
        runners.submit(e)
    wait_for(lambda: done == [2], timeout=5, what="the next job on the same runner")
    runners.stop()
    assert let_go == [1]
    assert table.get(1) is None, "the failed job is still heartbeated"
    assert table.free() == 2


def test_a_slot_is_freed_once_whoever_settles_first() -> None:
    table = InFlightTable(1, threading.Event())
    e = entry(7)
    table.add(e)
    assert table.free() == 0
    assert table.overdue() == []  # no deadline
    assert table.abandon(e) is True
    assert table.finish_run(e) is False  # the late result is dropped
    assert table.abandon(e) is False
    assert table.free() == 1
