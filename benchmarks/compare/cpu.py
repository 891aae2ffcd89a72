"""CPU accounting from /proc: a process tree's CPU time, the machine's, and its load average.

Times are in clock ticks (USER_HZ, 100 per second on Linux), as /proc reports them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HZ = os.sysconf("SC_CLK_TCK")
PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (which may hold spaces), or None."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()


def _children() -> dict[int, list[int]]:
    """Every live process's children, from one pass over /proc."""
    tree: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None:
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def tree_ticks(
    root: int,
    *,
    exclude: frozenset[int] = frozenset(),
    tree: dict[int, list[int]] | None = None,
) -> int:
    """CPU ticks of `root` and its live descendants, with the children they have reaped.

    A child that exits between two readings moves from the live sum into its parent's
    cutime/cstime, so the difference of two readings is the tree's CPU in between. `tree`:
    the process tree (_children()) when the caller reads several roots at one moment.
    """
    tree = _children() if tree is None else tree
    total = 0
    stack = [root]
    while stack:
        pid = stack.pop()
        if pid in exclude:
            continue
        fields = _stat_fields(pid)
        if fields is None:
            continue
        # utime, stime, cutime, cstime are fields 14-17 of stat; fields[0] is field 3.
        total += sum(int(f) for f in fields[11:15])
        stack.extend(tree.get(pid, []))
    return total


def pid_ticks(pid: int) -> int:
    """CPU ticks of one process alone (utime + stime)."""
    fields = _stat_fields(pid)
    return int(fields[11]) + int(fields[12]) if fields else 0


def machine_busy_ticks() -> tuple[int, int]:
    """(busy, total) ticks over all CPUs since boot, from the first line of /proc/stat."""
    values = [int(v) for v in (PROC / "stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])  # user..steal; guest time is already inside user
    return total - idle, total


def loadavg() -> float:
    """The 1-minute load average."""
    return float((PROC / "loadavg").read_text().split()[0])


@dataclass
class Reading:
    wall: float
    machine_busy: int
    machine_total: int
    ours: int
    workers: int
    postgres: int
    load: float


@dataclass
class Usage:
    """CPU used between two readings: per process group, and the rest of the machine."""

    seconds: float
    worker_s: float
    postgres_s: float
    other_busy_pct: float  # machine CPU busy that none of the benchmark's processes used
    load_before: float
    load_after: float


class Meter:
    """Reads the CPU of the workers, of Postgres and of everything this benchmark started.

    `worker_pids` are the worker processes (with their children). Postgres is the postmaster's
    tree less `exclude_backends` (the benchmark's own polling connection), when /proc shows it.
    """

    def __init__(
        self,
        worker_pids: list[int],
        postmaster: int | None,
        exclude_backends: frozenset[int] = frozenset(),
    ) -> None:
        self.worker_pids = worker_pids
        self.postmaster = postmaster
        self.exclude = exclude_backends

    def read(self) -> Reading:
        # One pass over /proc for every tree: a pass takes tens of milliseconds on a busy
        # machine, and one per worker made a reading of 16 workers last half a second, most
        # of a drain, so that their CPU was read after they had spent it.
        tree = _children()
        busy, total = machine_busy_ticks()
        workers = sum(tree_ticks(pid, tree=tree) for pid in self.worker_pids)
        postgres = (
            tree_ticks(self.postmaster, exclude=self.exclude, tree=tree) if self.postmaster else 0
        )
        excluded = sum(pid_ticks(pid) for pid in self.exclude)
        # Ours: this process's whole tree (workers and child scripts included), Postgres and the
        # polling backend; the postmaster is not our descendant (pg_ctl daemonizes it).
        ours = tree_ticks(os.getpid(), tree=tree) + postgres + excluded
        return Reading(time.monotonic(), busy, total, ours, workers, postgres, loadavg())

    @staticmethod
    def usage(before: Reading, after: Reading) -> Usage:
        total = max(1, after.machine_total - before.machine_total)
        other = (after.machine_busy - before.machine_busy) - (after.ours - before.ours)
        return Usage(
            seconds=after.wall - before.wall,
            worker_s=(after.workers - before.workers) / HZ,
            postgres_s=(after.postgres - before.postgres) / HZ,
            other_busy_pct=max(0.0, 100.0 * other / total),
            load_before=before.load,
            load_after=after.load,
        )


@contextmanager
def ahead_of_workers(nice: int = -10) -> Iterator[None]:
    """Run this thread at a higher priority than the workers (where the system allows it).

    A drain's first CPU reading must be taken the moment its jobs are committed; on a crowded
    machine the benchmark's thread, one runnable task among the workers, their backends and
    other sessions' processes, waited for a core for up to a fifth of an 8-worker drain, and
    the CPU spent meanwhile went uncounted. Linux keeps a nice value per thread, so the
    workers, the server and the other threads of this process keep theirs.
    """
    tid = threading.get_native_id()
    before = os.getpriority(os.PRIO_PROCESS, tid)
    try:
        os.setpriority(os.PRIO_PROCESS, tid, nice)
        raised = True
    except PermissionError:  # not root and no CAP_SYS_NICE: measure as before
        raised = False
    try:
        yield
    finally:
        if raised:
            os.setpriority(os.PRIO_PROCESS, tid, before)


def wait_idle(
    pids: list[int], *, quiet_s: float = 0.5, least_s: float = 1.0, most_s: float = 60
) -> None:
    """Wait until the processes' trees have been (nearly) idle for `quiet_s`: imports, connects
    and schema checks done, waiting on LISTEN or a poll timer. At least `least_s` seconds."""

    def ticks() -> int:
        tree = _children()
        return sum(tree_ticks(pid, tree=tree) for pid in pids)

    start = time.monotonic()
    last = ticks()
    quiet_since = time.monotonic()
    while time.monotonic() - start < most_s:
        time.sleep(0.1)
        now = ticks()
        if now - last > 1:  # more than one tick per 100 ms: still busy
            quiet_since = time.monotonic()
        last = now
        if time.monotonic() - quiet_since >= quiet_s and time.monotonic() - start >= least_s:
            return
    raise TimeoutError(f"workers {pids} never went idle in {most_s} s")


def wait_quiet(
    meter: Meter, *, max_other_pct: float, window: float = 1.0, most_s: float = 30
) -> float:
    """Wait (at most `most_s`) for a `window` in which the machine's CPU busy outside this
    benchmark is at most `max_other_pct` % of all cores: other sessions share this machine, and
    a measurement started in a quiet moment is less likely to be disturbed. Returns the seconds
    waited."""
    start = time.monotonic()
    while time.monotonic() - start < most_s:
        before = meter.read()
        time.sleep(window)
        if Meter.usage(before, meter.read()).other_busy_pct <= max_other_pct:
            break
    return time.monotonic() - start
