"""A form from a JSON schema, and a form's values back as JSON: how the Review page asks a
person for the payload a durable wait expects.

A waiting step records its model's JSON schema (pipeline.waits.schema); the page draws an input
per property of the right kind, prefilled from the wait's proposal, and turns what comes back
into the JSON the schema describes. This reads the forms a pydantic model's schema takes
(`type`, `anyOf` with `null` for optional fields, `enum`, `format`, `$ref` into `$defs`, arrays),
not every JSON schema: a property of a shape it does not know is edited as JSON text. The
payload's validation is `pg_pipeline.signal`'s, against the schema itself; this only parses.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

#: The prefix of every field's input name, so that no property can be called `csrf` or `action`.
PREFIX = "field."
#: Characters of one value the form accepts: a review answers fields, not documents.
VALUE_MAX = 20_000
#: Properties drawn at most; a schema with more is shown up to that, the rest from the proposal.
FIELDS_MAX = 200

Kind = Literal["text", "number", "integer", "decimal", "date", "datetime", "boolean", "enum",
               "lines", "json"]  # fmt: skip


@dataclass(frozen=True)
class FormField:
    """One property as an input: its kind, its text in the input, and what the page says about
    it (the wait's detail for the field, the error from the last submission)."""

    name: str
    label: str
    kind: Kind
    value: str  #: the input's text
    nullable: bool = False
    required: bool = False
    options: tuple[str, ...] = ()  #: an enum's values, as the input offers them
    choices: tuple[Any, ...] = ()  #: the same values as JSON
    description: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def input_name(self) -> str:
        return PREFIX + self.name

    @property
    def flagged(self) -> bool:
        return self.detail.get("needs_review") is True


class BadValue(ValueError):
    """A form value that cannot be the JSON its property wants; the message says why."""


def _resolve(schema: Any, root: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """`schema` with a local `$ref` (#/$defs/X) followed, and `allOf` of one (pydantic's way of
    describing a field with a default) unwrapped."""
    if not isinstance(schema, dict) or depth > 10:
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        merged = {
            **_resolve(target, root, depth + 1),
            **{k: v for k, v in schema.items() if k != "$ref"},
        }
        return merged
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return {
            **_resolve(all_of[0], root, depth + 1),
            **{k: v for k, v in schema.items() if k != "allOf"},
        }
    return schema


def _alternatives(
    schema: dict[str, Any], root: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], bool]:
    """The non-null shapes a property may take, and whether it may be null."""
    options = schema.get("anyOf") or schema.get("oneOf")
    shapes: list[dict[str, Any]] = []
    if isinstance(options, list):
        shapes = [_resolve(o, root) for o in options]
    else:
        kinds = schema.get("type")
        shapes = [{**schema, "type": k} for k in kinds] if isinstance(kinds, list) else [schema]
    nullable = any(s.get("type") == "null" for s in shapes)
    if "enum" in schema and None in schema["enum"]:
        nullable = True
    return [s for s in shapes if s.get("type") != "null"], nullable


def _kind(shapes: list[dict[str, Any]], root: Mapping[str, Any]) -> tuple[Kind, tuple[Any, ...]]:
    """The input a property gets, and an enum's values."""
    types = {s.get("type") for s in shapes}
    if len(shapes) == 1:
        only = shapes[0]
        if isinstance(only.get("enum"), list) and only["enum"]:
            return "enum", tuple(v for v in only["enum"] if v is not None)
        if "const" in only:
            return "enum", (only["const"],)
        kind = only.get("type")
        if kind == "string":
            fmt = only.get("format")
            if fmt == "date":
                return "date", ()
            if fmt == "date-time":
                return "datetime", ()
            return "text", ()
        if kind == "integer":
            return "integer", ()
        if kind == "number":
            return "number", ()
        if kind == "boolean":
            return "boolean", ()
        if kind == "array":
            items = _resolve(only.get("items", {}), root)
            if items.get("type") == "string" and "format" not in items:
                return "lines", ()
        return "json", ()
    if types == {"number", "string"} or types == {"integer", "string"}:
        # pydantic's Decimal: a number, or a string of one (which keeps every digit).
        return "decimal", ()
    return "json", ()


def _enum_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def value_text(kind: Kind, value: Any) -> str:
    """A JSON value as the text its input shows."""
    if value is None:
        return ""
    if kind == "lines" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    if kind == "boolean":
        return "true" if value is True else "false" if value is False else json.dumps(value)
    if kind == "json":
        return json.dumps(value, ensure_ascii=False, indent=2)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def form_fields(
    schema: Mapping[str, Any],
    values: Mapping[str, Any] | None,
    detail: Mapping[str, Any] | None = None,
    *,
    texts: Mapping[str, str] | None = None,
    errors: Mapping[str, str] | None = None,
) -> list[FormField]:
    """An input per property of `schema`, in its order: prefilled from `values` (the proposal,
    as JSON), or from `texts` (what was submitted, to show again with its `errors`). `detail`:
    the wait's detail, whose `fields` maps a property to what is shown beside it and whose
    `order` lists the properties in the order to show them."""
    root = dict(schema)
    top = _resolve(root, root)
    properties = top.get("properties")
    if not isinstance(properties, dict):
        return []
    required = set(top.get("required") or ())
    per_field = (detail or {}).get("fields")
    per_field = per_field if isinstance(per_field, dict) else {}
    # The schema is stored as jsonb, which keeps an object's keys in an order of its own
    # (shortest first): the detail's `order`, a list, gives the model's.
    order = (detail or {}).get("order")
    rank = {n: i for i, n in enumerate(order)} if isinstance(order, list) else {}
    names = sorted(properties, key=lambda n: rank.get(n, len(rank)))
    out = []
    for name in names[:FIELDS_MAX]:
        raw = properties[name]
        prop = _resolve(raw, root)
        shapes, nullable = _alternatives(prop, root)
        kind, choices = _kind(shapes, root)
        if texts is not None:
            text = texts.get(name, "")
        else:
            text = value_text(kind, (values or {}).get(name, prop.get("default")))
        about = per_field.get(name)
        out.append(
            FormField(
                name=name,
                label=str(prop.get("title") or name),
                kind=kind,
                value=text,
                nullable=nullable,
                required=name in required,
                options=tuple(_enum_text(c) for c in choices),
                choices=choices,
                description=prop.get("description")
                if isinstance(prop.get("description"), str)
                else None,
                detail=about if isinstance(about, dict) else {},
                error=(errors or {}).get(name),
            )
        )
    return out


def parse_value(item: FormField, text: str) -> Any:
    """The JSON a field's text stands for; BadValue when it cannot stand for any."""
    if len(text) > VALUE_MAX:
        raise BadValue(f"longer than {VALUE_MAX} characters")
    stripped = text.strip()
    if item.kind == "lines":
        return [line.strip() for line in text.splitlines() if line.strip()]
    if not stripped and item.nullable:
        return None
    if item.kind == "date":
        if not _DATE.fullmatch(stripped):
            raise BadValue("must be a date such as 2027-03-15")
        _parsed(date.fromisoformat, stripped, "is no such date")
        return stripped
    if item.kind == "datetime":
        # The schema's "date-time" is not checked by the signal's validation; a value that
        # is no time would fail the waiting step's own model when it resumes.
        if not _DATETIME.fullmatch(stripped):
            raise BadValue(
                "must be a date and time such as 2027-03-15T12:00:00+01:00 (the offset when "
                "the time's zone is known)"
            )
        _parsed(datetime.fromisoformat, stripped.replace("z", "Z"), "is no such time")
        return stripped
    if item.kind == "text":
        # As typed: spaces inside a title are the reviewer's; round the ends only.
        return stripped
    if item.kind == "enum":
        for option, choice in zip(item.options, item.choices, strict=True):
            if option == stripped:
                return choice
        raise BadValue(f"must be one of {', '.join(item.options)}")
    if item.kind == "boolean":
        if stripped in ("true", "false"):
            return stripped == "true"
        raise BadValue("must be true or false")
    if item.kind == "integer":
        try:
            return int(stripped)
        except ValueError:
            raise BadValue("must be a whole number") from None
    if item.kind in ("number", "decimal"):
        try:
            number = Decimal(stripped)
        except InvalidOperation:
            raise BadValue("must be a number, such as 1250000.50") from None
        if not number.is_finite():
            raise BadValue("must be a finite number")
        if item.kind == "decimal":
            return stripped  # the string keeps every digit the reviewer typed
        as_float = float(number)
        if not math.isfinite(as_float):
            raise BadValue("is too large")
        return (
            int(number)
            if number == number.to_integral_value() and "." not in stripped
            else as_float
        )
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise BadValue(f"is not JSON: {exc.msg} at character {exc.pos + 1}") from None


_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DATETIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})?"
)


def _parsed(parse: Callable[[str], Any], text: str, why: str) -> None:
    try:
        parse(text)
    except ValueError:
        raise BadValue(why) from None


def parse_form(
    fields: list[FormField], form: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """The payload the form's values stand for, each field's submitted text, and the fields
    whose text cannot be parsed, with why."""
    payload: dict[str, Any] = {}
    texts: dict[str, str] = {}
    errors: dict[str, str] = {}
    for item in fields:
        text = form.get(item.input_name)
        if text is None:  # an input the browser did not send: the schema's default, if any
            continue
        texts[item.name] = text
        try:
            payload[item.name] = parse_value(item, text)
        except BadValue as exc:
            errors[item.name] = f"{item.label} {exc}"
    return payload, texts, errors
