"""What one attempt consumed: the counters a stage reports with `ctx.usage(...)` and the CPU the
worker measures itself. Written with the attempt's end (pipeline.job_attempts.usage), summed
into the usage rollups (sql/functions/roll_up_usage.sql); docs/usage.md says what a user writes.

A counter is a number that adds up within the attempt (`pages=1` twice is 2 pages) or a text
label whose last value wins (`model="gpt-4o-mini"`). Names are identifiers. Two names are the
worker's own: `wall_s` (seconds the run took) and `cpu_s` (CPU seconds of the thread running the
stage, or of the coroutine's steps for an `async def` stage, plus `child_cpu_s`, the CPU of
child processes the stage reports it ran: a thread cannot see a child's CPU, and
RUSAGE_CHILDREN is the whole process's, of children already waited for, so the child
measures its own and the stage reports it).
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Coroutine, Generator
from typing import Any

#: measured by the worker, never reported by a stage
RESERVED = frozenset({"wall_s", "cpu_s"})
#: CPU seconds of child processes the stage ran: kept as reported, and added to cpu_s
CHILD_CPU = "child_cpu_s"
#: characters in a counter's name: PostgreSQL's identifier length, so a name fits a label too
NAME_MAX = 63
#: characters in a label's value (a model's name, an endpoint's): more is not a label
LABEL_MAX = 200
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Counters = dict[str, float | str]


def counter_name(name: str) -> str:
    """A counter's name: an ASCII identifier of at most NAME_MAX characters, not reserved."""
    if not _NAME.fullmatch(name) or len(name) > NAME_MAX:
        raise ValueError(
            f"usage counter {name!r}: a name is an identifier of letters, digits and _"
            f" (at most {NAME_MAX} characters, not starting with a digit)"
        )
    if name in RESERVED:
        raise ValueError(
            f"usage counter {name!r} is measured by the worker itself; report child"
            f" processes' CPU as {CHILD_CPU}"
        )
    return name


def counter_value(name: str, value: object) -> float | str:
    """A reported value: a finite number >= 0 (int or float, not bool) or a label."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"usage counter {name!r}: {value!r} is neither a number nor a text label")
    if isinstance(value, str):
        if len(value) > LABEL_MAX or "\x00" in value:
            raise ValueError(
                f"usage counter {name!r}: a label is at most {LABEL_MAX} characters, without NUL"
            )
        return value
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"usage counter {name!r}: {value!r} is not a finite number >= 0")
    return number


class Usage:
    """One attempt's reported counters. Thread-safe: a stage may report from threads of its own."""

    __slots__ = ("_counters", "_lock")

    def __init__(self) -> None:
        self._counters: Counters = {}
        self._lock = threading.Lock()

    def add(self, counters: dict[str, Any]) -> None:
        """Add numbers, set labels; nothing is kept when one of them is refused."""
        checked = [(counter_name(k), counter_value(k, v)) for k, v in counters.items()]
        with self._lock:
            for name, value in checked:
                old = self._counters.get(name)
                if old is not None and isinstance(old, str) != isinstance(value, str):
                    kind = "a label" if isinstance(old, str) else "a number"
                    raise ValueError(f"usage counter {name!r} is {kind} in this attempt already")
            for name, value in checked:
                old = self._counters.get(name)
                if isinstance(value, str) or old is None:
                    self._counters[name] = value
                else:
                    self._counters[name] = float(old) + value

    def counters(self) -> Counters:
        with self._lock:
            return dict(self._counters)

    def __bool__(self) -> bool:
        return bool(self._counters)


def measured(counters: Counters, wall_s: float, cpu_s: float | None) -> Counters:
    """What an attempt's row keeps: the reported counters, wall_s, and cpu_s with the children's
    CPU added (cpu_s left out when the worker could not measure it)."""
    row: Counters = {**counters, "wall_s": wall_s}
    if cpu_s is not None:
        child = counters.get(CHILD_CPU, 0.0)
        row["cpu_s"] = cpu_s + (child if isinstance(child, float) else 0.0)
    return row


class CpuOfSteps:
    """Wraps a coroutine to count the CPU its steps take on the thread that runs them: an async
    stage shares its loop's thread with others, so the thread's CPU is not the stage's."""

    __slots__ = ("_coroutine", "cpu_s")

    def __init__(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        self._coroutine = coroutine
        self.cpu_s = 0.0

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine = self._coroutine
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            began = time.thread_time()
            try:
                step = coroutine.send(sent) if thrown is None else coroutine.throw(thrown)
            except StopIteration as stop:
                return stop.value
            finally:
                self.cpu_s += time.thread_time() - began
            try:
                sent, thrown = (yield step), None
            except BaseException as exc:  # a cancel: passed into the stage's coroutine
                sent, thrown = None, exc

    def run(self) -> Coroutine[Any, Any, Any]:
        """The coroutine to schedule in place of the stage's."""

        async def wrapped() -> Any:
            return await self

        return wrapped()
