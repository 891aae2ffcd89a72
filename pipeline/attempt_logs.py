"""The lines a stage logs while a job runs, kept per attempt and written with the attempt's
end (pipeline.job_attempts.logs), never a statement per line.

`running()` (pipeline/logs.py) opens a buffer for the claim when the run starts and closes it
when the run ends; `AttemptLogHandler`, on the root logger, appends each record logged in that
context to it. The completer takes a `snapshot` when it settles the claim (inside the run, or
from the timeout watchdog while the run is stuck) and sends it with the write that ends the
attempt: the batched acknowledgement, a completion, a retry or a failure.

Capped per attempt: the first ATTEMPT_LOG_CAP bytes of lines are kept, and the lines past that
counted (logs_dropped), so a job keeps at most max_attempts x the cap. What is not written: the
lines of an attempt whose worker died (its lease expires, reclaim records the attempt as lost),
of one cancelled while it ran (the cancel records the attempt; the worker's writes no longer
hold), and the lines a child process running an isolated job logged before it crashed.
The framework's own loggers (pg_pipeline.*) are left out: they are the worker's, not the stage's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

#: bytes of log lines kept per attempt (UTF-8); the lines past it are counted, not kept
ATTEMPT_LOG_CAP = 64 * 1024
LINE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@dataclass(frozen=True)
class AttemptLog:
    """What a worker knows of one attempt when it ends it."""

    started: float  #: when the run began, seconds since the epoch
    text: str | None  #: the kept lines, newline-separated; None when the stage logged none
    dropped: int  #: lines past the cap


class _Buffer:
    def __init__(self) -> None:
        self.started = time.time()
        self.lines: list[str] = []
        self.size = 0
        self.dropped = 0
        self.lock = threading.Lock()

    def add(self, line: str) -> None:
        size = len(line.encode("utf-8", "replace")) + 1
        with self.lock:
            if self.dropped or self.size + size > ATTEMPT_LOG_CAP:
                # Past the cap every later line is dropped too, so the kept ones read in order
                # without a gap.
                self.dropped += 1
                return
            self.lines.append(line)
            self.size += size

    def snapshot(self) -> AttemptLog:
        with self.lock:
            text = "\n".join(self.lines) if self.lines else None
            return AttemptLog(self.started, text, self.dropped)


_buffers: dict[tuple[int, int], _Buffer] = {}
_buffers_lock = threading.Lock()
_current: ContextVar[_Buffer | None] = ContextVar("pipeline_attempt_log", default=None)


@contextmanager
def collecting(fence: tuple[int, int]) -> Iterator[None]:
    """Within this block, records logged in this context are kept for the claim `fence`."""
    buffer = _Buffer()
    with _buffers_lock:
        _buffers[fence] = buffer
    token = _current.set(buffer)
    try:
        yield
    finally:
        _current.reset(token)
        with _buffers_lock:
            if _buffers.get(fence) is buffer:
                del _buffers[fence]


def snapshot(fence: tuple[int, int]) -> AttemptLog | None:
    """The claim's lines so far; None when no run of it is going on in this process."""
    with _buffers_lock:
        buffer = _buffers.get(fence)
    return None if buffer is None else buffer.snapshot()


def params(logs: Mapping[int, AttemptLog | None], ids: list[int]) -> dict[str, Any]:
    """The batched statements' arrays (sql/queries.sql `complete`, `acknowledge`), in the order
    of `ids`. Start times travel as one array literal, like the fences; the lines as a text
    array, and NULL when no job logged any (the common case costs nothing to send)."""
    got = [logs.get(i) for i in ids]
    started = ",".join("NULL" if a is None else repr(a.started) for a in got)
    texts = [None if a is None else a.text for a in got]
    any_text = any(t is not None for t in texts)
    dropped = [0 if a is None else a.dropped for a in got]
    return {
        "started": "{" + started + "}",
        "logs": texts if any_text else None,
        "dropped": dropped if any(dropped) else None,
    }


def one_params(log: AttemptLog | None) -> dict[str, Any]:
    """The single-job statements' parameters (`retry_later`, `fail`)."""
    if log is None:
        return {"started": None, "logs": None, "dropped": 0}
    return {"started": log.started, "logs": log.text, "dropped": log.dropped}


class AttemptLogHandler(logging.Handler):
    """Keeps each record logged within `collecting` for its attempt."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(_LineFormatter(LINE_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        buffer = _current.get()
        if buffer is None or record.name == "pg_pipeline" or record.name.startswith("pg_pipeline."):
            return
        try:
            buffer.add(self.format(record))
        except Exception:
            self.handleError(record)


class _LineFormatter(logging.Formatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


def install() -> None:
    """Give the root logger an AttemptLogHandler, once."""
    root = logging.getLogger()
    if not any(isinstance(h, AttemptLogHandler) for h in root.handlers):
        root.addHandler(AttemptLogHandler())
