"""A page that says what went wrong, with its HTTP status: what a handler or a security check
raises instead of a traceback. pipeline/dashboard/web.py renders it."""

from __future__ import annotations


class Problem(Exception):
    def __init__(self, status: int, title: str, detail: str, *, retry: bool = False) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail, self.retry = status, title, detail, retry
