"""Cancel hints checked against the rows (pipeline/worker/cancels.py), with a store that answers
as the rows would."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import cast

from pg_pipeline.store import JobStore
from pg_pipeline.worker.cancels import CancelChecks
from pg_pipeline.worker.inflight import InFlightTable
from tests.unit.pipeline.worker.jobs import entry


class Rows:
    """Jobs 2 and 3 held; only job 3's row is cancelled."""

    def cancelled(self, claims: Iterable[tuple[int, int]]) -> set[int]:
        return {job_id for job_id, _ in claims if job_id == 3}


class Stopper:
    def __init__(self) -> None:
        self.checks: CancelChecks | None = None
        self.forged_when_stopped: list[int] = []

    def cancel(self, job_id: int, claim: int) -> None:
        assert self.checks is not None
        self.forged_when_stopped.append(self.checks.forged)


def test_a_forged_hint_is_counted_before_a_real_one_of_its_batch_stops_its_job() -> None:
    # Whoever waits for the real cancel to stop its job (the worker's tests) has every hint of
    # the batch dealt with by then.
    table = InFlightTable(2, threading.Event())
    table.add_all([entry(2), entry(3)])
    stopper = Stopper()
    checks = CancelChecks(cast(JobStore, Rows()), table, stopper)
    stopper.checks = checks

    checks.check([(2, 1), (3, 1)])

    assert stopper.forged_when_stopped == [1]
    assert checks.forged == 1
