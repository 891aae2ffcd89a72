"""The worker's metrics."""

from __future__ import annotations

from pipeline.worker.completer import Settled
from pipeline.worker.metrics import RESULTS


def test_every_settlement_but_a_batched_one_is_counted_under_a_metrics_result() -> None:
    assert set(RESULTS) == {s.value for s in Settled} - {Settled.BATCHED.value}
    assert Settled.DONE == "done" and f"{Settled.LOST}" == "lost", "not the word a log says"
