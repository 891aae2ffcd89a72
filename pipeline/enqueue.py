"""Enqueue in the caller's transaction: commit and the job exists, roll back and it does not."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, Protocol

import psycopg
from pydantic import BaseModel

from pg_pipeline import recorded_stages as recorded
from pg_pipeline.blobs import blob_keys, names_blob
from pg_pipeline.errors import InvalidPayload, UnknownStage
from pg_pipeline.limits import charges_json, recorded_charges
from pg_pipeline.plans import Plan, Statement, Steps, execute, sync_api
from pg_pipeline.queries import Q
from pg_pipeline.stage import (
    LEASE_S_DEFAULT,
    MAX_ATTEMPTS_DEFAULT,
    REGISTRY,
    Registry,
)
from pg_pipeline.tracing import current_traceparent
from pg_pipeline.validation import (
    InvalidJob,
    check_dedup_key,
    check_payload_size,
    check_priority,
    check_tenant_id,
    storable_json,
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


def job_row(request: JobRequest, registry: Registry, *, validate: bool = True) -> dict[str, Any]:
    """The validated columns of one job of a stage in `registry`, its defaults filled in."""
    spec = registry.get(request.type)
    # Refused here, with the reason, rather than by the database inside someone's transaction
    # (a stage's completing one, where it would cost the job).
    try:
        if validate:
            payload_json = storable_model_json(spec.validate(request.payload))
        else:
            payload_json = storable_json(_plain(request.payload))
    except ValueError as exc:
        raise _unstorable(request.type, exc) from None
    row = _row(request, payload_json, spec)
    if spec.limits:
        model = _once(lambda: spec.validate(request.payload))
        payload = json.loads(payload_json)
        row["limits"] = charges_json(
            [limit.charge(payload, model, row["tenant_id"]) for limit in spec.limits]
        )
    return row


def _once(make: Callable[[], BaseModel]) -> Callable[[], BaseModel]:
    """`make`, called at most once: a limit's callables share one validated payload."""
    made: list[BaseModel] = []

    def get() -> BaseModel:
        if not made:
            made.append(make())
        return made[0]

    return get


def _row(request: JobRequest, payload_json: str, spec: _HasDefaults) -> dict[str, Any]:
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
        # A stage's own priority was checked when it was registered (or recorded).
        "priority": spec.priority if request.priority is None else check_priority(request.priority),
        "max_attempts": max_attempts,
        "lease_seconds": spec.lease_s,
        "run_after": _when(request.run_after),
        "dedup_key": dedup_key,
        "parent_id": request.parent_id,
        "root_id": request.root_id,
        "join_id": request.join_id,
        "traceparent": current_traceparent(),
        "limits": None,  # the rate-limit charges (pipeline/limits.py): JSON text, or None
    }


class _HasDefaults(Protocol):
    """What a job takes from its stage when the request leaves it out."""

    @property
    def max_attempts(self) -> int: ...
    @property
    def lease_s(self) -> int: ...
    @property
    def priority(self) -> int: ...


class _Defaults(NamedTuple):
    """A stage's defaults when it is known by name only: as a worker recorded them, or the
    library's when no worker did (an unvalidated enqueue, before any worker started)."""

    max_attempts: int = MAX_ATTEMPTS_DEFAULT
    lease_s: int = LEASE_S_DEFAULT
    priority: int = 0


def _plain(payload: Any) -> Any:
    return payload.model_dump(mode="json") if isinstance(payload, BaseModel) else payload


def _unstorable(stage: str, exc: ValueError) -> InvalidPayload:
    return InvalidPayload(f"payload for stage {stage!r} cannot be stored: {exc}")


Rows = list[dict[str, Any]]


class JobRows(NamedTuple):
    """The rows of some requests, made by the steps that begin a plan, and whether a payload
    names a blob (see `names_blob`): the plan's statements then land together, the blob
    references (migration 0029) with their jobs."""

    steps: Steps[Rows]
    blobs: bool


def job_rows(requests: Sequence[JobRequest], registry: Registry, *, validate: bool) -> JobRows:
    """The rows of `requests`. A stage in `registry` (this process's code) is checked now,
    before anything connects; any other is looked up by name in what workers recorded, by the
    first statement of the plan these steps begin (its payload is made JSON now all the same)."""
    rows: list[dict[str, Any] | str] = [
        job_row(r, registry, validate=validate) if r.type in registry else _payload_json(r)
        for r in requests
    ]
    blobs = any(names_blob(row if isinstance(row, str) else row["payload"]) for row in rows)
    return JobRows(_rows_by_name(requests, rows, registry, validate), blobs)


def _payload_json(request: JobRequest) -> str:
    try:
        return storable_json(_plain(request.payload))
    except ValueError as exc:
        raise _unstorable(request.type, exc) from None


def _rows_by_name(
    requests: Sequence[JobRequest],
    rows: list[dict[str, Any] | str],
    registry: Registry,
    validate: bool,
) -> Steps[Rows]:
    """The rows, each payload of a stage found by name (JSON text in `rows`) made a row."""
    names = sorted({r.type for r, row in zip(requests, rows, strict=True) if isinstance(row, str)})
    found: dict[str, list[recorded.RecordedStage]] = {}
    if names:
        found = recorded.by_name((yield from recorded.read_steps(names)))
        unknown = [n for n in names if n not in found]
        if unknown and validate:
            known = yield from recorded.names_steps()
            raise UnknownStage(unknown[0], sorted({*registry.names(), *known}), recorded=True)
    return [
        _recorded_row(request, row, found, validate) if isinstance(row, str) else row
        for request, row in zip(requests, rows, strict=True)
    ]


def _recorded_row(
    request: JobRequest,
    payload_json: str,
    found: dict[str, list[recorded.RecordedStage]],
    validate: bool,
) -> dict[str, Any]:
    if validate:
        # The schema describes the JSON the payload is stored as, not the Python values.
        recorded.check_payload(request.type, found[request.type], json.loads(payload_json))
    version = recorded.defaults(found, request.type)
    defaults = _Defaults() if version is None else version
    row = _row(request, payload_json, defaults)
    if version is not None and version.limits:
        payload = _with_defaults(json.loads(payload_json), version.input_schema)
        charges = recorded_charges(request.type, version.limits, payload, row["tenant_id"])
        row["limits"] = charges_json(charges)
    return row


def _with_defaults(payload: Any, schema: Any) -> Any:
    """The payload with the defaults its recorded schema gives the top-level fields it leaves
    out: what the worker's model will read, and so what a limit charged from code reads."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(payload, dict) or not isinstance(properties, dict):
        return payload
    defaults = {
        name: field["default"]
        for name, field in properties.items()
        if name not in payload and isinstance(field, dict) and "default" in field
    }
    return payload | defaults


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
    validate: bool = True,
    registry: Registry | None = None,
) -> Plan[int]:
    """Insert one job on `conn` (inside its open transaction, if any) and return its id.

    The payload is validated first: an unknown stage, a bad payload or one over the payload
    limit (PayloadTooLarge), a tenant id or dedup key too long to index (InvalidJob) raises and
    inserts nothing. With a dedup_key already taken for this type, the existing job's id comes back.

    `type` need not be a stage this process imports: a stage a worker recorded
    (pg_pipeline.recorded_stages) is validated against its recorded JSON schema and takes its
    recorded defaults. validate=False stores the payload as given (still JSON, within the
    payload limit) and leaves the check to the worker that claims the job; it enqueues a stage
    no worker has recorded yet too, with the library's defaults.
    """
    request = JobRequest(
        type, payload, tenant_id, priority, run_after, dedup_key, max_attempts, parent_id, root_id
    )
    rows = job_rows([request], registry or REGISTRY, validate=validate)
    return Plan(_insert_one(rows.steps), atomic=rows.blobs)


def enqueue_once_plan(
    type: str,
    payload: Any,
    *,
    dedup_key: str,
    tenant_id: str | int | None = None,
    priority: int | None = None,
    validate: bool = True,
    registry: Registry | None = None,
) -> Plan[tuple[int, bool]]:
    """Like enqueue with a dedup key, and says whether the job is new (True) or was there."""
    request = JobRequest(type, payload, tenant_id, priority, dedup_key=dedup_key)
    rows = job_rows([request], registry or REGISTRY, validate=validate)
    return Plan(_insert_one_found(rows.steps), atomic=rows.blobs)


def enqueue_many_plan(
    requests: Iterable[JobRequest],
    *,
    validate: bool = True,
    registry: Registry | None = None,
) -> Plan[list[int]]:
    """Insert many jobs in one statement; returns the ids inserted (dedup conflicts are skipped).

    Every payload is validated before anything is sent (against what workers recorded, for a
    stage this process does not import: see enqueue), so one bad job inserts none.
    """
    known = registry or REGISTRY
    requests = list(requests)
    if all(r.type in known for r in requests):
        return insert_rows_plan([job_row(r, known, validate=validate) for r in requests])
    # The records are read and the rows inserted together, on an autocommit connection too.
    return Plan(_insert_all(job_rows(requests, known, validate=validate).steps), atomic=True)


# The public functions: `enqueue(conn, ...)` runs enqueue_plan(...) on what `conn` holds;
# pg_pipeline.aio makes the async ones from the same plans.
enqueue = sync_api(enqueue_plan)
enqueue_once = sync_api(enqueue_once_plan)
enqueue_many = sync_api(enqueue_many_plan)


def _insert_one(rows: Steps[Rows]) -> Steps[int]:
    return (yield from _insert_one_found(rows))[0]


def _insert_one_found(rows: Steps[Rows]) -> Steps[tuple[int, bool]]:
    (row,) = yield from rows
    return (yield from insert_row_steps(row))


def _insert_all(rows: Steps[Rows]) -> Steps[list[int]]:
    made = yield from rows
    return (yield from _insert_chunks(_statements(made)))


def insert_row(conn: psycopg.Connection[Any], row: dict[str, Any]) -> tuple[int, bool]:
    """Insert one row from job_row: (id, True), or (the holder's id, False) on a dedup key."""
    return execute(conn, Plan(insert_row_steps(row), atomic=names_blob(row["payload"])))


def insert_row_steps(row: dict[str, Any]) -> Steps[tuple[int, bool]]:
    found = yield Statement(Q["enqueue"], row)
    if found:
        job_id = int(found[0][0])
        keys = blob_keys(row["payload"])
        if keys:
            yield _refs([(row["root_id"] or job_id, keys)])
        return job_id, True
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
    statements = _statements(rows)
    # Several statements (chunks, or blob references after the jobs): all or nothing, on an
    # autocommit connection too.
    atomic = len(statements) > 1 or any(chunk.blobs for chunk in statements)
    return Plan(_insert_chunks(statements), atomic=atomic)


class _Chunk(NamedTuple):
    statement: Statement
    rows: Sequence[dict[str, Any]]
    blobs: bool  #: a payload of it names a blob


def _statements(rows: Sequence[dict[str, Any]]) -> list[_Chunk]:
    """The statements inserting `rows`, each with its rows."""
    chunks = list(_chunks(rows)) if rows else []
    statements = [_chunk_statement(chunk) for chunk in chunks]
    # One search of each statement's payloads, joined already, rather than one per row.
    return [
        _Chunk(s, chunk, names_blob(s.params["payloads"]))
        for s, chunk in zip(statements, chunks, strict=True)
    ]


def _insert_chunks(chunks: list[_Chunk]) -> Steps[list[int]]:
    ids: list[int] = []
    for statement, rows, blobs in chunks:
        inserted = [int(r[0]) for r in (yield statement)]
        if blobs and inserted:
            yield from _chunk_refs(rows, inserted)
        ids += inserted
    return ids


def _chunk_refs(rows: Sequence[dict[str, Any]], ids: list[int]) -> Steps[None]:
    """The blob references of a chunk's jobs. The ids come back in the rows' order (each row
    takes the sequence's next value as the statement reads it, in order); when a dedup key
    already taken left rows out, which ones is not said, and the inserted jobs are read back."""
    if len(ids) == len(rows):
        pairs = zip(rows, ids, strict=True)
        found = [(row["root_id"] or job_id, row["payload"]) for row, job_id in pairs]
    else:
        found = [(int(run), payload) for run, payload in (yield _read_back(ids))]
    named = [(run, keys) for run, payload in found if (keys := blob_keys(payload))]
    if named:
        yield _refs(named)


def _read_back(ids: list[int]) -> Statement:
    return Statement(Q["blob_refs_payloads"], {"ids": ids})


def _refs(named: Iterable[tuple[int, list[str]]]) -> Statement:
    """The statement recording that each run references its blob keys."""
    keys: list[str] = []
    runs: list[int] = []
    for run, run_keys in named:
        keys += run_keys
        runs += [run] * len(run_keys)
    return Statement(Q["blob_refs_add"], {"keys": keys, "runs": runs})


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
    ("limits", "limits_each"),
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
