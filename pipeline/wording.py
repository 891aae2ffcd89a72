"""Counts in words, as the CLI and the worker's log print them: "1 blob", "2 blobs", "0 blobs"."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and `noun`, in the plural (`plural`, else `noun` + "s") unless `n` is one."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
