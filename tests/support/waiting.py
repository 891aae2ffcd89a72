"""Wait for conditions, never for fixed sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(check: Callable[[], T], *, timeout: float = 30.0, what: str = "condition") -> T:
    """Poll `check` with a growing interval until it returns something truthy."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(delay)
        delay = min(0.25, delay * 1.5)
