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
MEASURED = frozenset({"wall_s", "cpu_s"})
#: money, which reports and budgets (pipeline.tenant_usage) compute from the price table
COST = "cost"
#: CPU seconds of child processes the stage ran: kept as reported, and added to cpu_s
CHILD_CPU = "child_cpu_s"
#: the most child CPU seconds an attempt may report (about 31 years): cpu_s travels to the
#: attempt's row in whole microseconds, a bigint, which more would overflow
CHILD_CPU_MAX_S = 1e9
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
    if name in MEASURED:
        raise ValueError(
            f"usage counter {name!r} is measured by the worker itself; report child"
            f" processes' CPU as {CHILD_CPU}"
        )
    if name == COST:
        raise ValueError(
            f"usage counter {name!r} is the money the price table makes of the counters;"
            " report what is priced (tokens_in, pages) or a money counter of your own (usd)"
        )
    return name


def priced_counter(name: str) -> str:
    """A counter a price may be set for: one a stage reports, or wall_s and cpu_s."""
    return name if name in MEASURED else counter_name(name)


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


#: Guards every attempt's counters: reports are rare (a few per attempt), and a lock per
#: attempt was a measurable part of a no-op job's cost to the worker.
_lock = threading.Lock()


class Usage:
    """One attempt's usage: the counters its stage reported (thread-safe: a stage may report
    from threads of its own), and the run's seconds and CPU as the worker measured them
    (pipeline/executor.run_job)."""

    __slots__ = ("_counters", "began", "cpu_s", "steps_cpu_s", "wall_s")

    def __init__(self) -> None:
        self._counters: Counters = {}
        self.began: float | None = None  #: time.perf_counter() when the run began
        self.wall_s: float | None = None  #: seconds the run took, once it is over
        self.cpu_s: float | None = None  #: CPU seconds of the stage's thread or steps
        self.steps_cpu_s = 0.0  #: CPU seconds of an async stage's steps (CpuOfSteps)

    def measures(self) -> tuple[float | None, float | None, Counters | None]:
        """(wall_s, cpu_s, reported counters or None) for the attempt's row: cpu_s with the
        children's CPU added; a run still going (a timeout settles it) counts its seconds so
        far and has no CPU figure (another thread cannot read the stage thread's)."""
        wall = self.wall_s
        if wall is None and self.began is not None:
            wall = time.perf_counter() - self.began
        if not self._counters:
            return wall, self.cpu_s, None
        counters = self.counters()
        cpu = self.cpu_s
        child = counters.get(CHILD_CPU)
        if isinstance(child, float):
            cpu = child if cpu is None else cpu + child
        return wall, cpu, counters

    def add(self, counters: dict[str, Any]) -> None:
        """Add numbers, set labels; nothing is kept when one of them is refused."""
        checked = [(counter_name(k), counter_value(k, v)) for k, v in counters.items()]
        with _lock:
            added: Counters = {}
            for name, value in checked:
                old = self._counters.get(name)
                if old is not None and isinstance(old, str) != isinstance(value, str):
                    kind = "a label" if isinstance(old, str) else "a number"
                    raise ValueError(f"usage counter {name!r} is {kind} in this attempt already")
                if isinstance(value, str) or old is None:
                    added[name] = value
                else:
                    total = float(old) + value
                    if not math.isfinite(total):  # no JSON, so no attempt's row
                        raise ValueError(
                            f"usage counter {name!r}: {value!r} more is past the largest number"
                        )
                    added[name] = total
                total_child = added.get(CHILD_CPU)
                if isinstance(total_child, float) and total_child > CHILD_CPU_MAX_S:
                    raise ValueError(
                        f"usage counter {CHILD_CPU!r}: more than {CHILD_CPU_MAX_S:g} CPU seconds"
                    )
            self._counters.update(added)

    def counters(self) -> Counters:
        with _lock:
            return dict(self._counters)

    def __bool__(self) -> bool:
        return bool(self._counters)


class CpuOfSteps:
    """Wraps a coroutine to count the CPU its steps take on the thread that runs them (into
    `usage.steps_cpu_s`): an async stage shares its loop's thread with others, so the thread's
    CPU is not the stage's."""

    __slots__ = ("_coroutine", "_usage")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], usage: Usage) -> None:
        self._coroutine = coroutine
        self._usage = usage

    @property
    def cpu_s(self) -> float:
        return self._usage.steps_cpu_s

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
                self._usage.steps_cpu_s += time.thread_time() - began
            try:
                sent, thrown = (yield step), None
            except BaseException as exc:  # a cancel: passed into the stage's coroutine
                sent, thrown = None, exc

    def run(self) -> Coroutine[Any, Any, Any]:
        """The coroutine to schedule in place of the stage's."""

        async def wrapped() -> Any:
            return await self

        return wrapped()
