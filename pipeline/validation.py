"""Checks that a job's values can be stored, made before anything is sent to the database, and
the job's payload as JSON text for its jsonb column.

The database would refuse these values too, but inside the caller's transaction (or a stage's
completing one) and with a message that names no field; refusing them here names the field.
The checks themselves are pipeline/inputs.py's (and pipeline/jsonb.py's, for JSON); the library
raises them as InvalidJob.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from pipeline import inputs
from pipeline.errors import PipelineError
from pipeline.jsonb import MAX_DEPTH, find_unstorable

__all__ = [
    "MAX_DEPTH",
    "InvalidJob",
    "check_priority",
    "find_unstorable",
    "storable_json",
    "storable_model_json",
]

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
