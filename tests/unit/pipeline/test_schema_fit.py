"""Whether a stage's output fits the next stage's input, from their JSON schemas alone."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from pg_pipeline.schema_fit import misfits


def fit(output: type[BaseModel], input: type[BaseModel]) -> list[str]:
    """As @stage compares them: the output as it is written, the input as it is validated."""
    return misfits(output.model_json_schema(mode="serialization"), input.model_json_schema())


class Count(BaseModel):
    total: int
    note: str = "x"


class Bill(BaseModel):
    total: int
    currency: str


class Ratio(BaseModel):
    total: float


class Total(BaseModel):
    model_config = ConfigDict(extra="forbid")
    total: int


class MaybeTotal(BaseModel):
    total: int | None


class Kind(BaseModel):
    kind: Literal["pdf", "image"]


class PdfOnly(BaseModel):
    kind: Literal["pdf"]


class Page(BaseModel):
    number: int


class Pages(BaseModel):
    pages: list[Page]


class PageNames(BaseModel):
    pages: list[str]


class Labels(BaseModel):
    labels: dict[str, int]


class Bounded(BaseModel):
    total: int = Field(gt=100)


@pytest.mark.parametrize(
    ("output", "input"),
    [
        (Count, Count),
        (Count, Ratio),  # an integer is a valid float
        (Bill, Count),  # extra output fields are ignored by a model that does not forbid them
        (MaybeTotal, MaybeTotal),
        (PdfOnly, Kind),  # the output's values are among the input's
        (Pages, Pages),  # nested models, through $defs
        (Labels, Labels),
        (Count, Bounded),  # a bound is not compared: the claim still checks it
    ],
)
def test_an_output_the_input_takes_has_no_misfits(
    output: type[BaseModel], input: type[BaseModel]
) -> None:
    assert fit(output, input) == []


@pytest.mark.parametrize(
    ("output", "input", "reason"),
    [
        (Count, Bill, "field 'currency': required, and the output has no such field"),
        (Ratio, Count, "field 'total': the output may give number, the input takes integer"),
        (Count, Total, "field 'note': the input forbids fields it does not declare"),
        (MaybeTotal, Count, "field 'total': the output may give null, the input takes integer"),
        (Kind, PdfOnly, "field 'kind': 'image' not among 'pdf'"),
        (Bill, PdfOnly, "field 'kind': required"),
        (Pages, PageNames, "field 'pages[]': the output may give object, the input takes string"),
    ],
)
def test_an_output_the_input_may_refuse_is_named_by_field(
    output: type[BaseModel], input: type[BaseModel], reason: str
) -> None:
    found = fit(output, input)
    assert any(line.startswith(reason) for line in found), found


def test_a_string_where_a_literal_is_expected_may_not_fit() -> None:
    class Free(BaseModel):
        kind: str

    assert fit(Free, Kind) == ["field 'kind': string is not limited to 'pdf', 'image'"]


def test_schemas_that_say_nothing_prove_nothing() -> None:
    assert misfits({}, {"type": "object", "required": ["a"]}) == []
    assert misfits({"type": "object", "properties": {"a": {}}}, {"type": "string"}) == [
        "the payload: the output may give object, the input takes string"
    ]
    # A dict may carry the required field: not proven missing.
    as_dict = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert misfits(as_dict, {"type": "object", "required": ["a"]}) == []
    # A reference outside the document resolves to nothing known.
    assert misfits({"$ref": "other.json#/x"}, {"type": "string"}) == []


def test_every_alternative_of_the_output_must_fit_some_alternative_of_the_input() -> None:
    either = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert misfits(either, {"anyOf": [{"type": "string"}, {"type": "number"}]}) == []
    assert misfits(either, {"anyOf": [{"type": "integer"}, {"type": "null"}]}) == [
        "the payload: string matches none of (integer, null)"
    ]
