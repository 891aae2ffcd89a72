"""The runner threads."""

from __future__ import annotations

import threading

from pg_pipeline.worker.inflight import InFlight, InFlightTable
from pg_pipeline.worker.runners import Runners
from tests.support.waiting import wait_for
from tests.unit.pipeline.worker.jobs import entry


def test_a_runner_that_fails_lets_go_of_the_job_and_keeps_serving() -> None:
    table = InFlightTable(2, threading.Event())
    let_go: list[int] = []
    done: list[int] = []

    class Executor:
        def execute(self, e: InFlight) -> None:
            if e.job.id == 1:
                raise RuntimeError("a bug in the worker")
            done.append(e.job.id)
            table.finish_run(e)

        def let_go(self, e: InFlight) -> None:
            let_go.append(e.job.id)
            table.finish_run(e)
            table.forget(e)

    runners = Runners(count=1, max_abandoned=4, on_too_many=print)
    runners.start(Executor())
    for job_id in (1, 2):
        e = entry(job_id)
        table.add(e)
        runners.submit(e)
    wait_for(lambda: done == [2], timeout=5, what="the next job on the same runner")
    runners.stop()
    assert let_go == [1]
    assert table.get(1) is None, "the failed job is still heartbeated"
    assert table.free() == 2
