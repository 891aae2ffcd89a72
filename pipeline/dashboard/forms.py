"""Reading the dashboard's query strings and forms: a value that cannot be right is refused
with the reason (400), never passed on to a query or left to raise."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

from pipeline.dashboard.data import JobQuery
from pipeline.vocabulary import JOB_ID_MAX, JOB_STATUSES

TEXT_MAX = 200  #: characters of a stage, tenant or search text
PAGE_SIZES = (20, 50, 100, 200)


class BadInput(ValueError):
    """A parameter the dashboard cannot use; the message says which and why."""


def text(params: Mapping[str, str], name: str) -> str | None:
    """A short text parameter; empty means unset (an empty form field)."""
    value = params.get(name, "").strip()
    if not value:
        return None
    if len(value) > TEXT_MAX:
        raise BadInput(f"{name} is longer than {TEXT_MAX} characters")
    if "\x00" in value:
        raise BadInput(f"{name} contains a NUL character")
    return value


def job_id(raw: str, what: str = "job id") -> int:
    if not re.fullmatch(r"[0-9]{1,19}", raw) or not 1 <= int(raw) <= JOB_ID_MAX:
        raise BadInput(f"{what} must be a whole number within 1..{JOB_ID_MAX}")
    return int(raw)


def instant(params: Mapping[str, str], name: str) -> datetime | None:
    """An ISO 8601 time; without an offset (what a datetime-local field sends) it is UTC."""
    value = text(params, name)
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(
            f"{name} is not a time such as 2026-12-01T09:30 or 2026-12-01T09:30+01:00"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def job_query(params: Mapping[str, str], tenant: str | None) -> JobQuery:
    status = text(params, "status")
    if status is not None and status not in JOB_STATUSES:
        raise BadInput(f"status must be one of {', '.join(JOB_STATUSES)}")
    since, until = instant(params, "since"), instant(params, "until")
    if since is not None and until is not None and since >= until:
        raise BadInput("since must be before until")
    before_raw, after_raw = text(params, "before"), text(params, "after")
    if before_raw is not None and after_raw is not None:
        raise BadInput("give before or after, not both")
    search = text(params, "q")
    if search is not None and status == "done":
        # A million done jobs, most without an error: a scan of the table, for little.
        raise BadInput(
            "the error search reads failed, cancelled, queued or running jobs, not done ones: "
            "choose one of those statuses, or any"
        )
    limit_raw = text(params, "limit") or "50"
    if limit_raw not in {str(n) for n in PAGE_SIZES}:
        raise BadInput(f"limit must be one of {', '.join(map(str, PAGE_SIZES))}")
    return JobQuery(
        status=status,
        stage=text(params, "stage"),
        tenant=tenant,
        since=since,
        until=until,
        search=search,
        before=None if before_raw is None else job_id(before_raw, "before"),
        after=None if after_raw is None else job_id(after_raw, "after"),
        limit=int(limit_raw),
    )
