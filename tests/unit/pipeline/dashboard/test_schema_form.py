"""The review form: an input per property of a pydantic model's JSON schema, and a form's text
back as the JSON the schema describes."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

import pytest
from pydantic import BaseModel

from pg_pipeline.dashboard.schema_form import FormField, form_fields, parse_form, parse_value


class Colour(StrEnum):
    red = "red"
    blue = "blue"


class Item(BaseModel):
    number: int
    title: str


class Answer(BaseModel):
    title: str | None = None
    due: datetime | None = None
    amount: Decimal | None = None
    count: int = 0
    ratio: float | None = None
    colour: Colour | None = None
    ok: bool = False
    codes: list[str] = []
    items: list[Item] = []


def fields(values: dict[str, Any] | None = None) -> dict[str, FormField]:
    return {f.name: f for f in form_fields(Answer.model_json_schema(), values)}


def test_each_property_gets_the_input_its_type_wants() -> None:
    kinds = {name: (f.kind, f.nullable) for name, f in fields().items()}
    assert kinds == {
        "title": ("text", True),
        "due": ("datetime", True),
        "amount": ("decimal", True),
        "count": ("integer", False),
        "ratio": ("number", True),
        "colour": ("enum", True),
        "ok": ("boolean", False),
        "codes": ("lines", False),
        "items": ("json", False),
    }
    assert fields()["colour"].options == ("red", "blue")


def test_inputs_are_prefilled_from_the_proposal() -> None:
    proposal = Answer(
        title="Roads",
        due=datetime.fromisoformat("2027-03-15T12:00:00+01:00"),
        amount=Decimal("1250000.50"),
        codes=["45233120-6", "45233141-9"],
        items=[Item(number=1, title="North")],
    ).model_dump(mode="json")
    shown = {name: f.value for name, f in fields(proposal).items()}
    assert shown["title"] == "Roads"
    assert shown["due"] == "2027-03-15T12:00:00+01:00"
    assert shown["amount"] == "1250000.50"
    assert shown["codes"] == "45233120-6\n45233141-9"
    assert shown["colour"] == "" and shown["count"] == "0" and shown["ok"] == "false"
    assert '"title": "North"' in shown["items"]


def test_a_form_becomes_the_json_its_model_takes() -> None:
    form = {
        "field.title": "  Road works ",
        "field.due": "2027-03-15T12:00:00+01:00",
        "field.amount": "1250000.50",
        "field.count": "3",
        "field.ratio": "",
        "field.colour": "blue",
        "field.ok": "true",
        "field.codes": "45233120-6\n\n 45233141-9 \n",
        "field.items": '[{"number": 2, "title": "South"}]',
    }
    payload, texts, errors = parse_form(list(fields().values()), form)
    assert errors == {}
    assert texts["title"] == "  Road works "
    answer = Answer.model_validate(payload)
    assert answer.title == "Road works" and answer.ratio is None
    assert answer.amount == Decimal("1250000.50") and payload["amount"] == "1250000.50"
    assert answer.codes == ["45233120-6", "45233141-9"]
    assert answer.items == [Item(number=2, title="South")]
    assert answer.colour is Colour.blue and answer.ok is True and answer.count == 3


@pytest.mark.parametrize(
    ("name", "text", "why"),
    [
        ("due", "next tuesday", "date and time"),
        ("due", "2027-02-30T12:00", "no such time"),
        ("amount", "1,250,000", "number"),
        ("count", "3.5", "whole number"),
        ("colour", "green", "one of red, blue"),
        ("items", "[{", "not JSON"),
        ("ok", "yes", "true or false"),
    ],
)
def test_a_value_that_cannot_be_its_type_is_refused_with_why(
    name: str, text: str, why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        parse_value(fields()[name], text)


def test_an_empty_optional_field_is_null_and_a_field_not_sent_keeps_its_default() -> None:
    payload, _, errors = parse_form(list(fields().values()), {"field.title": "", "csrf": "x"})
    assert payload == {"title": None} and errors == {}
