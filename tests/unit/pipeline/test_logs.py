"""The operator's log: one line per settled claim with the job's fields, the job's fields on the
stage's own lines (in its thread, and in threads it starts with its context), and a JSON format
with one object per line."""

from __future__ import annotations

import contextvars
import io
import json
import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

import pg_pipeline.logs
from pg_pipeline.logs import (
    JobFilter,
    JsonFormatter,
    LogSetup,
    TextFormatter,
    configure,
    current_job,
    log_settlement,
    log_settlements,
    running,
    settlements,
)
from pg_pipeline.outcomes import Discard, Fail, GiveBack, Retry
from pg_pipeline.store import ClaimedJob

NOW = datetime(2026, 12, 2, 6, 30, 0, tzinfo=UTC)
JOB = ClaimedJob(42, "resize", "acme", {"n": 1}, 0, 2, 5, 60, None, 42)


class Lines(logging.Handler):
    """Records as the JSON formatter writes them, parsed back."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(JsonFormatter())
        self.addFilter(JobFilter())
        self.lines: list[dict[str, Any]] = []
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        assert "\n" not in text, "a JSON line spans lines"
        self.texts.append(text)
        self.lines.append(json.loads(text))


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler = Lines()
    logger = logging.getLogger("pg_pipeline")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def settle_fields(line: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in line.items() if k not in ("time", "message")}


def test_a_retry_logs_one_warning_with_the_job_the_reason_and_the_next_run(lines: Lines) -> None:
    log_settlement(JOB, "queued", Retry(4.0, "ValueError: boom\n  File x.py", "raised"), NOW)
    [line] = lines.lines
    assert settle_fields(line) == {
        "level": "WARNING",
        "logger": "pg_pipeline.jobs",
        "job_id": 42,
        "stage": "resize",
        "tenant": "acme",
        "attempt": 2,
        "max_attempts": 5,
        "event": "retried",
        "cause": "raised",
        "reason": "ValueError: boom\n  File x.py",
        "next_run_at": "2026-12-02T06:30:04+00:00",
    }
    assert line["message"] == (
        "job 42 (resize, tenant acme, attempt 2/5) retried after an error: ValueError: boom; "
        "next run about 2026-12-02T06:30:04+00:00"
    )


def test_a_job_failed_for_good_logs_an_error_with_its_reason(lines: Lines) -> None:
    log_settlement(JOB, "failed", Fail("timed out after 3 s", "timed out"), NOW)
    [line] = lines.lines
    assert settle_fields(line) == {
        "level": "ERROR",
        "logger": "pg_pipeline.jobs",
        "job_id": 42,
        "stage": "resize",
        "tenant": "acme",
        "attempt": 2,
        "max_attempts": 5,
        "event": "failed",
        "cause": "timed out",
        "reason": "timed out after 3 s",
    }
    assert line["message"] == (
        "job 42 (resize, tenant acme, attempt 2/5) failed after a timeout: timed out after 3 s"
    )


def test_a_crash_is_an_error_even_when_the_job_is_retried(lines: Lines) -> None:
    crash = "crashed its worker process (killed by SIGKILL) while running in isolation"
    log_settlement(JOB, "queued", Retry(1.0, crash, "crashed"), NOW)
    [line] = lines.lines
    assert (line["level"], line["event"], line["cause"]) == ("ERROR", "retried", "crashed")


def test_a_lost_claim_logs_a_warning_with_why_and_no_next_run(lines: Lines) -> None:
    log_settlement(JOB._replace(tenant_id=None), "lost", Discard("cancelled"), NOW)
    [line] = lines.lines
    assert settle_fields(line) == {
        "level": "WARNING",
        "logger": "pg_pipeline.jobs",
        "job_id": 42,
        "stage": "resize",
        "tenant": None,
        "attempt": 2,
        "max_attempts": 5,
        "event": "lost",
        "reason": "cancelled",
    }
    assert line["message"] == "job 42 (resize, tenant -, attempt 2/5) lost: cancelled"


def test_a_lost_claim_of_a_batch_names_no_owner_it_does_not_know(lines: Lines) -> None:
    # A batch's acknowledgement finds the fence failed without knowing why: a cancel of the
    # running job fails it too, and no other claim owns that one.
    log_settlements([JOB], "lost")
    [line] = lines.lines
    assert line["message"] == (
        "job 42 (resize, tenant acme, attempt 2/5) lost: the job is no longer this claim's"
        " (cancelled, or reclaimed)"
    )


def test_a_job_given_back_uncharged_is_information_not_a_warning(lines: Lines) -> None:
    log_settlement(JOB, "queued", GiveBack(5.0, "no child process could run it"), NOW)
    [line] = lines.lines
    assert (line["level"], line["event"], line["cause"]) == ("INFO", "given_back", "not run")


def test_a_completion_is_logged_only_at_debug(lines: Lines) -> None:
    settlements.setLevel(logging.INFO)
    try:
        log_settlement(JOB, "done", None, NOW)
    finally:
        settlements.setLevel(logging.NOTSET)
    assert lines.lines == []


def test_the_stages_own_lines_carry_the_running_job_and_others_do_not(lines: Lines) -> None:
    stage_log = logging.getLogger("pg_pipeline.test_stage")
    with running(JOB):
        stage_log.info("resizing")
    stage_log.info("between jobs")
    inside, outside = lines.lines
    assert {k: inside.get(k) for k in ("job_id", "stage", "tenant", "attempt")} == {
        "job_id": 42,
        "stage": "resize",
        "tenant": "acme",
        "attempt": 2,
    }
    assert "job_id" not in outside and current_job() is None


def test_a_thread_the_stage_starts_with_its_context_carries_the_job(lines: Lines) -> None:
    def work() -> None:
        logging.getLogger("pg_pipeline.test_stage").info("in a helper thread")

    with running(JOB):
        context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(work,))
    thread.start()
    thread.join()
    [line] = lines.lines
    assert line["job_id"] == 42


def test_the_text_format_ends_a_stage_line_with_the_job_and_escapes_control_characters() -> None:
    record = logging.LogRecord("shop", logging.INFO, "x.py", 1, "read \x1b[31m%s", ("a",), None)
    with running(JOB):
        JobFilter().filter(record)
    text = TextFormatter().format(record)
    assert text.endswith("read \\x1b[31ma [job 42 resize tenant acme attempt 2]")


def test_configure_json_writes_one_object_per_line_with_the_traceback_inside(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pg_pipeline.logs, "_setup", None)  # restored: children take it on
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        configure(LogSetup("json", "INFO"), stream)
        try:
            raise KeyError("page")
        except KeyError:
            logging.getLogger("shop").exception("failed\nbadly")
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    [text] = stream.getvalue().splitlines()
    line = json.loads(text)
    assert (line["message"], line["logger"]) == ("failed\nbadly", "shop")
    assert "KeyError: 'page'" in line["exception"]


def test_an_unknown_log_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log format 'xml'"):
        configure(LogSetup("xml"))
