"""Reading the dashboard's query strings and forms: a value that cannot be right is refused
with the reason (400), never passed on to a query or left to raise.

The checks are pg_pipeline.inputs', the ones the CLI and the library use; `_checked` turns their
reason into a BadInput that names the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from pg_pipeline import inputs
from pg_pipeline.admin.jobs import JobQuery
from pg_pipeline.vocabulary import JOB_STATUSES

TEXT_MAX = 200  #: characters of a stage, tenant or search text
PAGE_SIZES = (20, 50, 100, 200)
#: The field that states the UTC offset of the jobs page's time fields. Those are
#: datetime-local inputs, which send a time without one; the page labels them UTC and sends
#: `zone=Z` along, so that a time is never read in a zone nobody stated.
ZONE_FIELD = "zone"

T = TypeVar("T")


class BadInput(ValueError):
    """A parameter the dashboard cannot use; the message says which and why."""


def _checked(check: Callable[..., T], value: str, name: str, **options: Any) -> T:
    """`check`, one of pg_pipeline.inputs', on the field `name`: its reason, a BadInput."""
    try:
        return check(value, what=name, **options)
    except ValueError as exc:
        raise BadInput(str(exc)) from None


def text(params: Mapping[str, str], name: str) -> str | None:
    """A short text parameter; empty means unset (an empty form field)."""
    value = params.get(name, "").strip()
    if not value:
        return None
    if len(value) > TEXT_MAX:
        raise BadInput(f"{name} is longer than {TEXT_MAX} characters")
    return _checked(inputs.text, value, name)


def job_id(raw: str, what: str = "job id") -> int:
    return _checked(inputs.job_id, raw, what)


def instant(params: Mapping[str, str], name: str) -> datetime | None:
    """An ISO 8601 time with its UTC offset, or in the zone the form states (ZONE_FIELD)."""
    value = text(params, name)
    if value is None:
        return None
    return _checked(inputs.instant, value, name, offset=text(params, ZONE_FIELD))


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
