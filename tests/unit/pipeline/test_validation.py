"""What pg_pipeline.validation refuses before a job reaches the database, and how it says why."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel

from pg_pipeline.enqueue import JobRequest, job_row
from pg_pipeline.errors import InvalidPayload, PayloadTooLarge, PipelineError
from pg_pipeline.settings import WorkerSettings
from pg_pipeline.stage import Registry, stage
from pg_pipeline.validation import (
    MAX_DEPTH,
    MAX_PAYLOAD_BYTES_DEFAULT,
    MAX_PAYLOAD_BYTES_ENV,
    InvalidJob,
    check_priority,
    find_unstorable,
    max_payload_bytes,
    set_max_payload_bytes,
    storable_json,
    storable_model_json,
)


@pytest.mark.parametrize("value", [-32768, -1, 0, 5, 32767])
def test_check_priority_returns_every_smallint(value: int) -> None:
    assert check_priority(value) == value


@pytest.mark.parametrize("value", [-32769, 32768, 40000, 2**63])
def test_check_priority_refuses_what_a_smallint_cannot_hold_and_names_the_range(
    value: int,
) -> None:
    with pytest.raises(InvalidJob, match=r"-32768\.\.32767") as caught:
        check_priority(value)
    assert str(value) in str(caught.value)


@pytest.mark.parametrize("value", [True, 1.5, "3", None])
def test_check_priority_refuses_what_is_not_an_integer(value: Any) -> None:
    with pytest.raises(InvalidJob, match="must be an integer"):
        check_priority(value)


def test_invalid_job_is_a_pipeline_error_and_a_value_error() -> None:
    assert issubclass(InvalidJob, PipelineError) and issubclass(InvalidJob, ValueError)


STORABLE: list[Any] = [
    None,
    True,
    0,
    -(10**100),
    1.5e308,
    "",
    "Grüße, 日本, emoji \U0001f600, tab\tand newline\n",
    [],
    {},
    {"lots": [{"title": "Lot 1", "value": 12.5, "cpv": ["45000000-7"]}], "n": None},
    (1, 2, "a tuple is written as a list"),
    {1: "int keys", None: "and None", False: "and bool become strings"},
]


@pytest.mark.parametrize("value", STORABLE, ids=repr)
def test_find_unstorable_accepts_json_that_jsonb_stores(value: Any) -> None:
    assert find_unstorable(value) is None
    json.dumps(value, allow_nan=False).encode("utf-8")  # what psycopg will send


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"text": "a\x00b"}, "NUL character in field 'text'"),
        ({"scores": [1.0, 2.0, math.nan]}, "NaN in field 'scores[2]'"),
        ({"x": math.inf}, "Infinity in field 'x'"),
        ({"x": -math.inf}, "-Infinity in field 'x'"),
        ({"lots": [{"title": "ok"}, {"title": "bad\x00"}]}, "in field 'lots[1].title'"),
        ({"a": {"b": {"c": [[0, "\x00"]]}}}, "NUL character in field 'a.b.c[0][1]'"),
        ({"odd key": {"x-y": "\x00"}}, """in field '["odd key"]["x-y"]'"""),
        ("\x00", "NUL character at the top level"),
        ([math.nan], "NaN in field '[0]'"),
        ({"name": "\udcff.pdf"}, "unpaired surrogate U+DCFF (not valid Unicode) in field 'name'"),
        ({"k\x00": 1}, "NUL character in a key of the top-level object"),
        ({"meta": {"\udcff": 1}}, "unpaired surrogate U+DCFF (not valid Unicode) in a key of "),
        ({"when": {1, 2}}, "a set, which is not JSON, in field 'when'"),
        ({"amount": Decimal("1.5")}, "a Decimal, which is not JSON, in field 'amount'"),
        ({"data": b"bytes"}, "a bytes, which is not JSON, in field 'data'"),
        ({(1, 2): "tuple key"}, "a tuple, which is not JSON, in a key of the top-level object"),
        ({math.nan: "nan key"}, "a non-finite number in a key of the top-level object"),
    ],
    ids=repr,
)
def test_find_unstorable_names_the_reason_and_the_field(value: Any, reason: str) -> None:
    found = find_unstorable(value)
    assert found is not None and reason in found, found


def test_find_unstorable_reports_the_first_problem_in_document_order() -> None:
    value = {"a": [1, {"b": math.nan}], "c": "\x00"}
    assert find_unstorable(value) == "NaN in field 'a[1].b'"


def test_find_unstorable_refuses_an_integer_json_dumps_cannot_write() -> None:
    huge = 10 ** (sys.get_int_max_str_digits() + 1)
    assert find_unstorable({"n": huge}) == "an integer too long to write as JSON in field 'n'"


def test_find_unstorable_refuses_a_circular_value_and_accepts_a_shared_one() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert find_unstorable({"x": loop}) == "a circular reference in field 'x[1]'"
    shared = {"k": "v"}
    assert find_unstorable({"a": shared, "b": [shared, shared]}) is None


def test_find_unstorable_refuses_nesting_the_encoder_would_crash_on_without_recursing() -> None:
    shallow: list[Any] = []
    node = shallow
    for _ in range(MAX_DEPTH - 1):
        node.append([])
        node = node[0]
    assert find_unstorable(shallow) is None
    deep: list[Any] = []
    node = deep
    for _ in range(50_000):  # far past the recursion limit: the walk must not recurse
        node.append([])
        node = node[0]
    found = find_unstorable({"deep": deep})
    assert found is not None and found.startswith(f"nesting deeper than {MAX_DEPTH} levels")
    assert len(found) < 200, "the path is shortened, not printed 500 levels long"


class _Doc(BaseModel):
    title: str = ""
    score: float = 0.0
    extra: Any = None
    tags: list[str] = []


@pytest.mark.parametrize(
    "doc",
    [
        _Doc(title="Grüße, 日本 \U0001f600", score=1.5, tags=["a", "b"], extra={"k": [1, 2]}),
        _Doc(title="no extra"),  # extra is None: written as null, so it takes the slow way
        _Doc(title="back\\u0000slash"),  # a backslash before u0000 is not a NUL
        _Doc(extra={"deep": [[[[1]]]]}, score=-(10**-300)),
        _Doc(extra=list(range(400))),  # longer than the fast way takes
    ],
    ids=repr,
)
def test_storable_model_json_stores_what_the_json_dump_would(doc: _Doc) -> None:
    text = storable_model_json(doc)
    assert json.loads(text) == json.loads(storable_json(doc.model_dump(mode="json")))


@pytest.mark.parametrize(
    ("doc", "reason"),
    [
        # extra is set, so that no other null sends these the slow way
        (_Doc(score=math.nan, extra=1), "NaN in field 'score'"),  # pydantic would write null
        (_Doc(score=-math.inf, extra=1), "-Infinity in field 'score'"),
        (_Doc(title="a\x00b", extra=1), "NUL character in field 'title'"),
        (_Doc(tags=["ok", "\ud800"], extra=1), "field 'tags[1]'"),
        (_Doc(extra={"k\x00": 1}), "in a key of field 'extra'"),
    ],
    ids=repr,
)
def test_storable_model_json_refuses_what_jsonb_cannot_hold(doc: _Doc, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        storable_model_json(doc)


# -- the payload limit, and keys the indexes can hold ------------------------------------------


class Note(BaseModel):
    text: str


NOTES = Registry()


@stage("note", registry=NOTES)
def note(job: Note, ctx: object) -> None:
    return None


@pytest.fixture
def limit_from(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str | None], None]]:
    """Set PIPELINE_MAX_PAYLOAD_BYTES (None: unset) as a process starting would see it."""

    def use(value: str | None) -> None:
        if value is None:
            monkeypatch.delenv(MAX_PAYLOAD_BYTES_ENV, raising=False)
        else:
            monkeypatch.setenv(MAX_PAYLOAD_BYTES_ENV, value)
        set_max_payload_bytes(None)

    use(None)
    yield use
    monkeypatch.delenv(MAX_PAYLOAD_BYTES_ENV, raising=False)
    set_max_payload_bytes(None)


def row_of(text: str, **columns: Any) -> dict[str, Any]:
    return job_row(JobRequest("note", {"text": text}, **columns), NOTES)


def test_the_default_payload_limit_keeps_a_full_claim_batch_within_a_hundred_megabytes(
    limit_from: Callable[[str | None], None],
) -> None:
    assert max_payload_bytes() == MAX_PAYLOAD_BYTES_DEFAULT == 256 * 1024
    # claim_batch_max payloads at the limit, held at once by a claim
    assert WorkerSettings().claim_batch_max * MAX_PAYLOAD_BYTES_DEFAULT <= 100 * 1024 * 1024
    overhead = len('{"text":""}')
    assert row_of("x" * (MAX_PAYLOAD_BYTES_DEFAULT - overhead))["payload"]
    with pytest.raises(PayloadTooLarge) as refused:
        row_of("x" * (MAX_PAYLOAD_BYTES_DEFAULT - overhead + 1))
    assert isinstance(refused.value, InvalidPayload)
    assert str(refused.value) == (
        f"payload for stage 'note' is {MAX_PAYLOAD_BYTES_DEFAULT + 1:,} bytes of JSON, over the "
        f"limit of {MAX_PAYLOAD_BYTES_DEFAULT:,} (PIPELINE_MAX_PAYLOAD_BYTES): store large data "
        "in blob storage (pg_pipeline.blob_store_from_env().put_bytes) and put its key in the "
        "payload"
    )


def test_the_payload_limit_counts_utf8_bytes_and_is_set_by_environment_or_call(
    limit_from: Callable[[str | None], None],
) -> None:
    limit_from("1000")
    overhead = len('{"text":""}')
    assert row_of("\u00e9" * 490)["payload"]  # 980 bytes and the braces
    # 497 characters, far below 1,000; 994 bytes of them, and the braces, over it.
    with pytest.raises(PayloadTooLarge, match=f"{994 + overhead:,} bytes of JSON, over the limit"):
        row_of("\u00e9" * 497)
    set_max_payload_bytes(2000)
    assert row_of("\u00e9" * 497)["payload"]
    with pytest.raises(ValueError, match=r"within 1\.\.268435456"):
        set_max_payload_bytes(0)


@pytest.mark.parametrize("value", ["lots", "0", "-5", "1e6"])
def test_a_bad_payload_limit_in_the_environment_is_named_at_the_first_enqueue(
    limit_from: Callable[[str | None], None], value: str
) -> None:
    limit_from(value)
    with pytest.raises(ValueError, match="PIPELINE_MAX_PAYLOAD_BYTES must be a whole number"):
        row_of("x")


@pytest.mark.parametrize(
    ("columns", "reason"),
    [
        ({"tenant_id": "t" * 513}, "tenant_id is 513 bytes long (UTF-8); at most 512 are allowed"),
        ({"dedup_key": "\u00e9" * 513}, "dedup_key is 1,026 bytes long (UTF-8); at most 1,024"),
        ({"tenant_id": "a\x00b"}, "tenant_id cannot contain a NUL character"),
        ({"dedup_key": "a\x00b"}, "dedup_key cannot contain a NUL character"),
    ],
)
def test_a_job_refuses_keys_too_long_to_index_naming_the_limit(
    columns: dict[str, Any], reason: str
) -> None:
    with pytest.raises(InvalidJob) as refused:
        row_of("x", **columns)
    assert reason in str(refused.value)


def test_keys_at_their_limits_are_kept_as_given() -> None:
    row = row_of("x", tenant_id=7, dedup_key="k" * 1024)
    assert (row["tenant_id"], row["dedup_key"]) == ("7", "k" * 1024)
    assert row_of("x", tenant_id="\u00e9" * 256)["tenant_id"] == "\u00e9" * 256
