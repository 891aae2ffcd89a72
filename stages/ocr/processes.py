"""Waiting for a child without reaping it, and killing its process group.

A child's pid keeps naming its process group until the child is reaped, so the group is always
killed before the leader is reaped: the signal can then never reach an unrelated process that
was given a reused pid.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Ended:
    """How a child ended: its exit status (negative: killed by that signal), whether it exited
    by itself before the deadline, and its peak resident set and CPU seconds when known."""

    returncode: int
    exited: bool
    peak_rss_bytes: int | None
    cpu_s: float | None = None


def wait_without_reaping(pid: int, timeout_s: float) -> bool:
    """Wait until the child has exited (a zombie, not reaped); False if the deadline came first."""
    deadline = time.monotonic() + timeout_s
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux >= 5.3: poll waitid() instead
        pidfd = None
    if pidfd is not None:
        try:
            return poll_exit(pidfd, timeout_s)
        finally:
            os.close(pidfd)
    delay = 0.001
    while True:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)


def poll_exit(pidfd: int, timeout_s: float) -> bool:
    """Wait until the process behind ``pidfd`` has exited; False if ``timeout_s`` came first."""
    deadline = time.monotonic() + timeout_s
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return bool(poller.poll(0))
        if poller.poll(math.ceil(remaining * 1000)):
            return True


def kill_group(pgid: int) -> None:
    # ESRCH: the group is already gone (or holds only the zombie leader, on some systems).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def signal_name(returncode: int) -> str:
    """'signal 6, SIGABRT' for a subprocess return code of -6."""
    number = -returncode
    try:
        return f"signal {number}, {signal.Signals(number).name}"
    except ValueError:
        return f"signal {number}"
