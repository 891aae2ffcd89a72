"""The lines a stage logs, kept per attempt in the worker until the attempt's end is written."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from pg_pipeline import attempt_logs
from pg_pipeline.attempt_logs import ATTEMPT_LOG_CAP, AttemptLog, collecting, snapshot

FENCE = (7, 2)


@pytest.fixture
def stage_log() -> Iterator[logging.Logger]:
    attempt_logs.install()
    log = logging.getLogger("tests.a_stage")
    log.setLevel(logging.INFO)
    yield log


def test_lines_logged_in_the_run_are_kept_for_its_claim(stage_log: logging.Logger) -> None:
    stage_log.info("before the run")
    with collecting(FENCE):
        stage_log.info("page %d read", 1)
        logging.getLogger("pg_pipeline.worker").warning("the worker's own line")
        try:
            raise ValueError("bad page")
        except ValueError:
            stage_log.exception("page 2 failed")
        kept = snapshot(FENCE)
    assert kept is not None and kept.text is not None and kept.dropped == 0
    lines = kept.text.splitlines()
    assert lines[0].endswith("INFO tests.a_stage: page 1 read")
    assert "page 2 failed" in lines[1] and "ValueError: bad page" in kept.text
    assert "before the run" not in kept.text and "worker's own line" not in kept.text
    assert snapshot(FENCE) is None, "the buffer goes with the run"


def test_past_the_cap_lines_are_counted_and_the_first_kept(stage_log: logging.Logger) -> None:
    line = "x" * 1000
    with collecting(FENCE):
        for n in range(ATTEMPT_LOG_CAP // 1000 + 5):
            stage_log.info("%03d %s", n, line)
        stage_log.info("short, but after the cap")
        kept = snapshot(FENCE)
    assert kept is not None and kept.text is not None
    assert len(kept.text.encode()) <= ATTEMPT_LOG_CAP
    assert kept.text.splitlines()[0].split(": ", 1)[1].startswith("000 ")
    assert kept.text.count("\n") + 1 + kept.dropped == ATTEMPT_LOG_CAP // 1000 + 6
    assert "after the cap" not in kept.text


def test_a_run_that_logs_nothing_sends_no_lines() -> None:
    with collecting(FENCE):
        kept = snapshot(FENCE)
    assert kept is not None and kept.text is None
    got = attempt_logs.params({7: kept, 8: None}, [7, 8])
    assert got["logs"] is None and got["dropped"] is None
    assert got["started"] == "{" + f"{int(kept.started * 1e6)}e-6" + ",NULL}"


def test_batched_params_keep_the_order_of_the_ids() -> None:
    logs = {1: AttemptLog(1.5, "one", 0), 3: AttemptLog(3.5, None, 4)}
    got = attempt_logs.params(logs, [3, 2, 1])
    assert got == {
        "started": "{3500000e-6,NULL,1500000e-6}",  # whole microseconds, read as seconds
        "logs": [None, None, "one"],
        "dropped": [4, 0, 0],
        "wall_us": "{NULL,NULL,NULL}",
        "cpu_us": "{NULL,NULL,NULL}",
        "usage": None,
    }


def test_batched_params_carry_each_attempts_usage_and_null_for_none() -> None:
    logs = {
        1: AttemptLog(1.5, None, 0, 0.25, 0.125, None),
        3: AttemptLog(3.5, None, 0, 2.0, None, {"pages": 3.0, "model": "m"}),
    }
    got = attempt_logs.params(logs, [3, 2, 1])
    assert got["wall_us"] == "{2000000,NULL,250000}"  # whole microseconds
    assert got["cpu_us"] == "{NULL,NULL,125000}"
    assert [None if u is None else u.obj for u in got["usage"]] == [
        {"pages": 3.0, "model": "m"},
        None,
        None,
    ]
