"""Enqueue in the caller's transaction: commit and the job exists, roll back and it does not."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import psycopg

from pipeline.errors import InvalidPayload
from pipeline.plans import Plan, Statement, Steps, execute, sync_api
from pipeline.queries import Q
from pipeline.stage import REGISTRY, Registry
from pipeline.tracing import current_traceparent
from pipeline.validation import (
    InvalidJob,
    check_dedup_key,
    check_payload_size,
    check_priority,
    check_tenant_id,
    storable_model_json,
)


class JobRequest(NamedTuple):
    """One job to enqueue; None means the stage's default.

    A named tuple rather than a frozen dataclass: as immutable, and a third of the cost to
    build, which a bulk enqueue of a thousand jobs pays a thousand times.
    """

    type: str
    payload: Any
    tenant_id: str | int | None = None
    priority: int | None = None
    run_after: datetime | timedelta | None = None
    dedup_key: str | None = None
    max_attempts: int | None = None
    parent_id: int | None = None
    root_id: int | None = None  # the run this job belongs to; None starts a run of its own
    join_id: int | None = None  # the fan-out whose join counts this job


def _when(run_after: datetime | timedelta | None) -> datetime | None:
    if isinstance(run_after, timedelta):
        return datetime.now(UTC) + run_after
    if run_after is not None and run_after.tzinfo is None:
        raise ValueError("run_after must be timezone-aware (or a timedelta from now)")
    return run_after


def job_row(request: JobRequest, registry: Registry) -> dict[str, Any]:
    """The validated columns of one job, the stage's defaults filled in."""
    spec = registry.get(request.type)
    # Refused here, with the reason, rather than by the database inside someone's transaction
    # (a stage's completing one, where it would cost the job).
    try:
        payload_json = storable_model_json(spec.validate(request.payload))
    except ValueError as exc:
        reason = f"payload for stage {request.type!r} cannot be stored: {exc}"
        raise InvalidPayload(reason) from None
    check_payload_size(payload_json, request.type)
    tenant = check_tenant_id(request.tenant_id)
    dedup_key = check_dedup_key(request.dedup_key)
    max_attempts = spec.max_attempts if request.max_attempts is None else request.max_attempts
    if not 1 <= max_attempts <= 2**31 - 1:
        raise InvalidJob(f"max_attempts must be within 1..{2**31 - 1}, not {max_attempts}")
    return {
        "type": request.type,
        "tenant_id": tenant,
        "payload": payload_json,  # JSON text: encoded once, here
        # A stage's own priority was checked when it was registered.
        "priority": spec.priority if request.priority is None else check_priority(request.priority),
        "max_attempts": max_attempts,
        "lease_seconds": spec.lease_s,
        "run_after": _when(request.run_after),
        "dedup_key": dedup_key,
        "parent_id": request.parent_id,
        "root_id": request.root_id,
        "join_id": request.join_id,
        "traceparent": current_traceparent(),
    }


def enqueue_plan(
    type: str,
    payload: Any,
    *,
    tenant_id: str | int | None = None,
    priority: int | None = None,
    run_after: datetime | timedelta | None = None,
    dedup_key: str | None = None,
    max_attempts: int | None = None,
    parent_id: int | None = None,
    root_id: int | None = None,
    registry: Registry | None = None,
) -> Plan[int]:
    """Insert one job on `conn` (inside its open transaction, if any) and return its id.

    The payload is validated first: an unknown stage, a bad payload or one over the payload
    limit (PayloadTooLarge), a tenant id or dedup key too long to index (InvalidJob) raises and
    inserts nothing. With a dedup_key already taken for this type, the existing job's id comes back.
    """
    request = JobRequest(
        type, payload, tenant_id, priority, run_after, dedup_key, max_attempts, parent_id, root_id
    )
    return Plan(insert_row_steps(job_row(request, registry or REGISTRY))).then(_first)


def enqueue_once_plan(
    type: str,
    payload: Any,
    *,
    dedup_key: str,
    tenant_id: str | int | None = None,
    priority: int | None = None,
    registry: Registry | None = None,
) -> Plan[tuple[int, bool]]:
    """Like enqueue with a dedup key, and says whether the job is new (True) or was there."""
    request = JobRequest(type, payload, tenant_id, priority, dedup_key=dedup_key)
    return Plan(insert_row_steps(job_row(request, registry or REGISTRY)))


def enqueue_many_plan(
    requests: Iterable[JobRequest],
    *,
    registry: Registry | None = None,
) -> Plan[list[int]]:
    """Insert many jobs in one statement; returns the ids inserted (dedup conflicts are skipped).

    Every payload is validated before anything is sent, so one bad job inserts none.
    """
    return insert_rows_plan([job_row(r, registry or REGISTRY) for r in requests])


# The public functions: `enqueue(conn, ...)` runs enqueue_plan(...) on what `conn` holds;
# pipeline.aio makes the async ones from the same plans.
enqueue = sync_api(enqueue_plan)
enqueue_once = sync_api(enqueue_once_plan)
enqueue_many = sync_api(enqueue_many_plan)


def _first(found: tuple[int, bool]) -> int:
    return found[0]


def insert_row(conn: psycopg.Connection[Any], row: dict[str, Any]) -> tuple[int, bool]:
    """Insert one row from job_row: (id, True), or (the holder's id, False) on a dedup key."""
    return execute(conn, Plan(insert_row_steps(row)))


def insert_row_steps(row: dict[str, Any]) -> Steps[tuple[int, bool]]:
    found = yield Statement(Q["enqueue"], row)
    if found:
        return int(found[0][0]), True
    existing = yield Statement(Q["find_by_dedup_key"], row)
    if not existing:  # the holder of the key was deleted between the two statements
        raise RuntimeError(f"dedup key {row['dedup_key']!r} vanished while enqueueing")
    return int(existing[0][0]), False


#: Payload characters per statement: the JSON array the payloads travel in is one jsonb value,
#: which Postgres caps at 256 MiB; a bigger batch goes in several statements, in one transaction.
_STATEMENT_PAYLOAD_CHARS = 64 * 1024 * 1024


def insert_rows(conn: psycopg.Connection[Any], rows: Sequence[dict[str, Any]]) -> list[int]:
    """Insert rows from job_row, in one statement unless huge; returns the ids inserted."""
    return execute(conn, insert_rows_plan(rows))


def insert_rows_plan(rows: Sequence[dict[str, Any]]) -> Plan[list[int]]:
    chunks = list(_chunks(rows)) if rows else []
    # Several statements: all or nothing, on an autocommit connection too.
    return Plan(_insert_chunks(chunks), atomic=len(chunks) > 1)


def _insert_chunks(chunks: list[Sequence[dict[str, Any]]]) -> Steps[list[int]]:
    ids: list[int] = []
    for chunk in chunks:
        ids += [int(r[0]) for r in (yield _chunk_statement(chunk))]
    return ids


def _chunks(rows: Sequence[dict[str, Any]]) -> Iterator[Sequence[dict[str, Any]]]:
    start, size = 0, 0
    for index, row in enumerate(rows):
        size += len(row["payload"]) + 1
        if size > _STATEMENT_PAYLOAD_CHARS and index > start:
            yield rows[start:index]
            start, size = index, len(row["payload"]) + 1
    yield rows[start:]


#: (row key, the statement's array parameter); the single value goes by the row key's name
_COLUMNS = (
    ("type", "types"),
    ("tenant_id", "tenant_ids"),
    ("priority", "priorities"),
    ("max_attempts", "max_attempts_each"),
    ("lease_seconds", "lease_seconds_each"),
    ("run_after", "run_afters"),
    ("dedup_key", "dedup_keys"),
    ("parent_id", "parent_ids"),
    ("root_id", "root_ids"),
    ("join_id", "join_ids"),
    ("traceparent", "traceparents"),
)


def _chunk_statement(rows: Sequence[dict[str, Any]]) -> Statement:
    params: dict[str, Any] = {
        # Each payload is JSON text already (job_row), so the array is a join away.
        "payloads": "[" + ",".join([r["payload"] for r in rows]) + "]",
    }
    for key, each in _COLUMNS:
        values = [r[key] for r in rows]
        first = values[0]
        # A column every row shares goes as that one value (see enqueue_many in queries.sql).
        # The values are ints, texts, datetimes or None, so Python's == is the database's.
        if values.count(first) == len(values):
            params[key], params[each] = first, None
        else:
            params[key], params[each] = None, values
    keyed = params["dedup_key"] is not None or params["dedup_keys"] is not None
    query = Q["enqueue_many"] if keyed else Q["enqueue_many_keyless"]
    return Statement(query, params)
