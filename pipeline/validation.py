"""Checks that a job's values can be stored, made before anything is sent to the database, and
the job's payload as JSON text for its jsonb column.

The database would refuse these values too, but inside the caller's transaction (or a stage's
completing one) and with a message that names no field; refusing them here names the field.
The payload limit is ours: a claim holds a batch of payloads in memory at once, so one of 50 MB
is refused here, at enqueue, with where large data goes instead.
The checks themselves are pipeline/inputs.py's (and pipeline/jsonb.py's, for JSON); the library
raises them as InvalidJob.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pg_pipeline import inputs
from pg_pipeline.errors import PayloadTooLarge, PipelineError
from pg_pipeline.jsonb import MAX_DEPTH, find_unstorable

if TYPE_CHECKING:  # annotations alone: readers of InvalidJob need no pydantic
    from pydantic import BaseModel

__all__ = [
    "MAX_DEPTH",
    "MAX_PAYLOAD_BYTES_DEFAULT",
    "MAX_PAYLOAD_BYTES_ENV",
    "InvalidJob",
    "check_dedup_key",
    "check_payload_size",
    "check_priority",
    "check_tenant_id",
    "find_unstorable",
    "max_payload_bytes",
    "set_max_payload_bytes",
    "storable_json",
    "storable_model_json",
]

#: Largest payload by default, in bytes of its JSON text (UTF-8). A claim returns up to
#: claim_batch_max (400) payloads in one result, which the worker holds whole: 400 of these
#: are 100 MiB, within any worker's means, where 400 of 50 MB would not be. Large data belongs
#: in blob storage, the payload carrying its key.
MAX_PAYLOAD_BYTES_DEFAULT = 256 * 1024
#: Sets the limit for a process (read when it first enqueues): a whole number of bytes.
MAX_PAYLOAD_BYTES_ENV = "PIPELINE_MAX_PAYLOAD_BYTES"
#: The highest limit one may set: a jsonb value holds at most 256 MiB.
_MAX_PAYLOAD_BYTES_CEILING = 256 * 1024 * 1024

_max_payload_bytes: int | None = None  # read from the environment on first use

T = TypeVar("T")

#: JSON text shorter than this cannot nest MAX_DEPTH deep (two characters a level) nor hold an
#: integer too large for jsonb, so json.dumps accepting it settles every other question.
_FAST_MAX_CHARS = 2 * MAX_DEPTH

# Built once: json.dumps with any option builds a new encoder per call, which cost more than
# the encoding of a small payload.
_STRICT_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


class InvalidJob(PipelineError, ValueError):
    """A job's columns cannot be stored (priority out of range, NUL in a text). Nothing was
    enqueued."""


def check_priority(value: int) -> int:
    """`value` if it fits `jobs.priority`, else InvalidJob naming the valid range."""
    try:
        return inputs.priority(value)
    except ValueError as exc:
        raise InvalidJob(str(exc)) from None


def check_tenant_id(value: str | int | None) -> str | None:
    """A job's tenant as text, or InvalidJob when it cannot be a key of the queue's indexes."""
    return None if value is None else _as_invalid_job(inputs.tenant_id, value)


def check_dedup_key(value: str | None) -> str | None:
    """`value`, or InvalidJob when it cannot be a key of the queue's indexes."""
    return None if value is None else _as_invalid_job(inputs.dedup_key, value)


def _as_invalid_job(check: Callable[[T], str], value: T) -> str:
    try:
        return check(value)
    except ValueError as exc:
        raise InvalidJob(str(exc)) from None


def max_payload_bytes() -> int:
    """The payload limit in force: set_max_payload_bytes', else PIPELINE_MAX_PAYLOAD_BYTES',
    else MAX_PAYLOAD_BYTES_DEFAULT."""
    global _max_payload_bytes
    if _max_payload_bytes is None:
        text = os.environ.get(MAX_PAYLOAD_BYTES_ENV, "").strip()
        _max_payload_bytes = (
            inputs.whole_number(text, 1, _MAX_PAYLOAD_BYTES_CEILING, MAX_PAYLOAD_BYTES_ENV)
            if text
            else MAX_PAYLOAD_BYTES_DEFAULT
        )
    return _max_payload_bytes


def set_max_payload_bytes(limit: int | None) -> None:
    """Set this process's payload limit, in bytes of JSON; None reads the environment again."""
    global _max_payload_bytes
    if limit is not None and (
        isinstance(limit, bool) or not 1 <= limit <= _MAX_PAYLOAD_BYTES_CEILING
    ):
        raise ValueError(f"the payload limit must be within 1..{_MAX_PAYLOAD_BYTES_CEILING}")
    _max_payload_bytes = limit


def check_payload_size(text: str, stage: str) -> str:
    """`text`, a payload's JSON, or PayloadTooLarge when it is over the limit."""
    limit = max_payload_bytes()
    if len(text) <= limit // 4:  # a character is at most 4 bytes: nearly every payload
        return text
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > limit:
        raise PayloadTooLarge(
            f"payload for stage {stage!r} is {size:,} bytes of JSON, over the limit of "
            f"{limit:,} ({MAX_PAYLOAD_BYTES_ENV}): store large data in blob storage "
            "(pg_pipeline.blob_store_from_env().put_bytes) and put its key in the payload"
        )
    return text


def storable_json(value: Any) -> str:
    """`value` as JSON text for a jsonb column; ValueError, with find_unstorable's reason, when
    it cannot be stored. A small value (nearly every payload) costs one json.dumps call."""
    try:
        text = _STRICT_ENCODE(value)
        text.encode("utf-8")  # a lone surrogate cannot be stored
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError):
        text = None
    # A NUL is escaped as \u0000 (so is a backslash before "u0000": the slow path tells them
    # apart).
    if text is None or len(text) >= _FAST_MAX_CHARS or "\\u0000" in text:
        problem = find_unstorable(value)
        if problem is not None:
            raise ValueError(problem)
        if text is None:  # refused by the strict encoder, yet storable: encode it plainly
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text


def storable_model_json(model: BaseModel) -> str:
    """A validated payload as JSON text for a jsonb column, as storable_json(its JSON dump)
    would give it; ValueError when it cannot be stored.

    pydantic's own encoder makes the text at a fifth of the cost of dump + json. It writes a
    NaN or an infinity as null, so a text with a null in it, like one with a NUL, a long one
    or one it refuses, takes storable_json's way, which finds those and names them.
    """
    serializer = model.__pydantic_serializer__
    try:
        data: bytes | None = serializer.to_json(model)
    except (ValueError, TypeError, RecursionError):
        data = None
    if data is None or len(data) >= _FAST_MAX_CHARS or b"null" in data or b"\\u0000" in data:
        return storable_json(serializer.to_python(model, mode="json"))
    return data.decode()
