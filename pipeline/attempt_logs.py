"""The lines a stage logs while a job runs, kept per attempt and written with the attempt's
end (pipeline.job_attempts.logs), never a statement per line; with them, what the attempt
consumed (pipeline/usage.py).

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
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, NamedTuple

from psycopg.types.json import Jsonb

from pg_pipeline.usage import Counters, Usage

#: bytes of log lines kept per attempt (UTF-8); the lines past it are counted, not kept
ATTEMPT_LOG_CAP = 64 * 1024
LINE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class AttemptLog(NamedTuple):
    """What a worker knows of one attempt when it ends it. A named tuple: one is made for every
    job, where a frozen dataclass cost three times as much to build."""

    started: float  #: when the run began, seconds since the epoch
    text: str | None  #: the kept lines, newline-separated; None when the stage logged none
    dropped: int  #: lines past the cap
    #: what the attempt consumed (pipeline/usage.py): seconds, CPU seconds, the counters the
    #: stage reported (None: none)
    wall_s: float | None = None
    cpu_s: float | None = None
    usage: Counters | None = None


class _Buffer:
    # Slots, and the list only once a line comes: most runs log nothing, and a buffer is made
    # for every one of them. Its lines are guarded by the module's _lines_lock, not a lock of
    # its own: lines are rare, and a lock made per run was a measurable part of a no-op job.
    __slots__ = ("dropped", "job", "lines", "size", "started")

    def __init__(self, job: Any = None) -> None:
        self.started = time.time()
        self.job = job  #: the running job (pipeline/logs.py running()), for log records
        self.lines: list[str] | None = None
        self.size = 0
        self.dropped = 0

    def add(self, line: str) -> None:
        size = len(line.encode("utf-8", "replace")) + 1
        with _lines_lock:
            if self.dropped or self.size + size > ATTEMPT_LOG_CAP:
                # Past the cap every later line is dropped too, so the kept ones read in order
                # without a gap.
                self.dropped += 1
                return
            if self.lines is None:
                self.lines = []
            self.lines.append(line)
            self.size += size

    def snapshot(self, usage: Usage | None) -> AttemptLog:
        wall, cpu, counters = (None, None, None) if usage is None else usage.measures()
        if self.lines is None and not self.dropped:
            # Nothing logged yet: a line that comes meanwhile missed the snapshot either way.
            return AttemptLog(self.started, None, 0, wall, cpu, counters)
        with _lines_lock:
            text = "\n".join(self.lines) if self.lines else None
            return AttemptLog(self.started, text, self.dropped, wall, cpu, counters)


#: Guards every buffer's lines (see _Buffer).
_lines_lock = threading.Lock()

#: The buffers of the runs going on, by claim. Without a lock: an item's assignment, lookup and
#: removal are each atomic, and only the run of a claim adds or removes its own (a claim runs
#: once), where a lock taken twice per job was a point where the runner threads queued.
_buffers: dict[tuple[int, int], _Buffer] = {}
_current: ContextVar[_Buffer | None] = ContextVar("pipeline_attempt_log", default=None)


class collecting:
    """Within this block, records logged in this context are kept for the claim `fence`, and
    `job` (the running job, when given) is what current_job() says.

    A class rather than a generator: it is entered for every job, and contextlib's machinery
    cost more than the buffer itself."""

    __slots__ = ("_buffer", "_fence", "_token")

    def __init__(self, fence: tuple[int, int], job: Any = None) -> None:
        self._fence = fence
        self._buffer = _Buffer(job)

    def __enter__(self) -> None:
        _buffers[self._fence] = self._buffer
        self._token = _current.set(self._buffer)

    def __exit__(self, *exc: object) -> None:
        _current.reset(self._token)
        if _buffers.get(self._fence) is self._buffer:
            _buffers.pop(self._fence, None)


def current_job() -> Any:
    """The job given to the `collecting` block this code runs in, or None."""
    buffer = _current.get()
    return None if buffer is None else buffer.job


def snapshot(fence: tuple[int, int], usage: Usage | None = None) -> AttemptLog | None:
    """The claim's lines so far, with `usage`'s measures; None when no run of it is going on in
    this process."""
    buffer = _buffers.get(fence)
    return None if buffer is None else buffer.snapshot(usage)


#: what an attempt nothing is known of sends: NULLs, and no lines dropped
_UNKNOWN = AttemptLog(None, None, 0)  # type: ignore[arg-type]


def params(logs: Mapping[int, AttemptLog | None], ids: list[int]) -> dict[str, Any]:
    """The batched statements' arrays (sql/queries.sql `complete`, `acknowledge`), in the order
    of `ids`. Start times and the measured seconds travel as array literals, like the fences:
    the seconds in whole microseconds, the start as whole microseconds with an exponent
    (`1733180000123456e-6`, a float8 the server reads exactly as the seconds), since formatting
    a float as itself cost three times as much, per job; the lines and the reported counters
    as arrays, NULL when no job has any (the common case costs nothing to send). This is built
    for every acknowledgement."""
    got = logs.get
    rows = [got(i) or _UNKNOWN for i in ids]
    started = ["NULL" if a[0] is None else f"{int(a[0] * 1e6)}e-6" for a in rows]
    walls = ["NULL" if a[3] is None else str(int(a[3] * 1e6)) for a in rows]
    cpus = ["NULL" if a[4] is None else str(int(a[4] * 1e6)) for a in rows]
    return {
        "started": "{" + ",".join(started) + "}",
        "logs": [a[1] for a in rows] if any(a[1] is not None for a in rows) else None,
        "dropped": [a[2] for a in rows] if any(a[2] for a in rows) else None,
        "wall_us": "{" + ",".join(walls) + "}",
        "cpu_us": "{" + ",".join(cpus) + "}",
        "usage": (
            [None if a[5] is None else Jsonb(a[5]) for a in rows]
            if any(a[5] is not None for a in rows)
            else None
        ),
    }


def one_params(log: AttemptLog | None) -> dict[str, Any]:
    """The single-job statements' parameters (`retry_later`, `fail`, `wait`)."""
    if log is None:
        return {
            "started": None,
            "logs": None,
            "dropped": 0,
            "wall_s": None,
            "cpu_s": None,
            "usage": None,
        }
    return {
        "started": log.started,
        "logs": log.text,
        "dropped": log.dropped,
        "wall_s": log.wall_s,
        "cpu_s": log.cpu_s,
        "usage": None if log.usage is None else Jsonb(log.usage),
    }


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
