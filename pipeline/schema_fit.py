"""Whether one stage's output fits the next stage's input, read from their JSON schemas.

`then="next"` makes a stage's output the input of a "next" job, validated when the producing
job completes: an output the next stage's model refuses would fail every such job for good,
after its work was done. The models' JSON schemas (pydantic's, the output's in serialization
mode, the input's in validation mode) say most of what refuses: a field the input requires
that the output lacks, a type the input does not take, a field an input that forbids extras
does not know. `misfits` finds those, so that @stage can refuse the pair when it is registered.

It reports only what the schemas prove: a constraint it does not read (a pattern, a bound, a
format, a validator in code) counts as fitting, and the run-time check still applies. So it
never refuses a pair that could work, at the cost of letting some that cannot through. The
same check reads schemas recorded by workers (pipeline/recorded_stages.py), without the code.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

Schema = Mapping[str, Any]

#: JSON types a value of the key's type is accepted as, by an input declaring them: pydantic
#: takes an integer for a float, so "integer" fits "number" (the reverse loses the fraction).
_ACCEPTED_AS = {"integer": {"integer", "number"}}


def misfits(output: Schema, input: Schema) -> list[str]:
    """Why some value of the `output` schema may be refused by the `input` schema, one reason a
    line naming the field; empty when every value the output schema allows fits."""
    return list(_Pair(output, input).compare(output, input, ""))


class _Pair:
    """The two root schemas, for their $defs: `{"$ref": "#/$defs/Page"}` resolves in its own."""

    def __init__(self, output: Schema, input: Schema) -> None:
        self.output_root = output
        self.input_root = input

    def compare(self, out: Any, into: Any, where: str) -> Iterator[str]:
        out = _resolve(self.output_root, out)
        into = _resolve(self.input_root, into)
        if into is True or into == {} or out is False:
            return  # the input takes anything, or the output never has a value
        if not isinstance(out, Mapping) or not isinstance(into, Mapping):
            return
        for key in ("anyOf", "oneOf"):
            if key in out:  # every alternative of the output must fit
                for member in out[key]:
                    yield from self.compare(member, into, where)
                return
        if "allOf" in into:
            for member in into["allOf"]:
                yield from self.compare(out, member, where)
            return
        if "allOf" in out and len(out["allOf"]) == 1:
            yield from self.compare(out["allOf"][0], into, where)
            return
        for key in ("anyOf", "oneOf"):
            if key in into:  # some alternative of the input must take it
                if not any(not list(self.compare(out, m, where)) for m in into[key]):
                    options = _alternatives(into[key])
                    yield f"{_at(where)}: {_describe(out)} matches none of {options}"
                return
        yield from self._values(out, into, where)

    def _values(self, out: Mapping[str, Any], into: Mapping[str, Any], where: str) -> Iterator[str]:
        allowed = _values_of(into)
        if allowed is not None:
            given = _values_of(out)
            if given is None:
                yield f"{_at(where)}: {_describe(out)} is not limited to {_list(allowed)}"
            elif stray := [v for v in given if v not in allowed]:
                yield f"{_at(where)}: {_list(stray)} not among {_list(allowed)}"
            return
        out_types, into_types = _types(out), _types(into)
        if out_types is None or into_types is None:
            return  # a schema that says no type: nothing proven
        refused = [t for t in out_types if not _ACCEPTED_AS.get(t, {t}) & into_types]
        if refused:
            gives, takes = " or ".join(sorted(refused)), " or ".join(sorted(into_types))
            yield f"{_at(where)}: the output may give {gives}, the input takes {takes}"
            return
        if "object" in out_types and "object" in into_types:
            yield from self._objects(out, into, where)
        items = out.get("items"), into.get("items")
        if "array" in out_types & into_types and all(isinstance(i, Mapping) for i in items):
            yield from self.compare(items[0], items[1], f"{where}[]")

    def _objects(
        self, out: Mapping[str, Any], into: Mapping[str, Any], where: str
    ) -> Iterator[str]:
        given: Mapping[str, Any] = out.get("properties", {})
        taken: Mapping[str, Any] = into.get("properties", {})
        extra = out.get("additionalProperties", False)
        for name in into.get("required", ()):
            # An output with extras (a dict, extra="allow") may carry it: nothing proven.
            if name not in given and not extra:
                yield f"{_at(_field(where, name))}: required, and the output has no such field"
        for name, schema in given.items():
            if name in taken:
                yield from self.compare(schema, taken[name], _field(where, name))
            elif into.get("additionalProperties", True) is False:
                yield f"{_at(_field(where, name))}: the input forbids fields it does not declare"
            elif isinstance(into.get("additionalProperties"), Mapping):
                yield from self.compare(schema, into["additionalProperties"], _field(where, name))
        if isinstance(extra, Mapping) and isinstance(into.get("additionalProperties"), Mapping):
            yield from self.compare(extra, into["additionalProperties"], f"{where}[*]")


def _resolve(root: Schema, node: Any) -> Any:
    seen = 0
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str) and seen < 32:
        target: Any = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            if not isinstance(target, Mapping) or part not in target:
                return {}  # a reference outside the document: nothing proven
            target = target[part]
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **siblings} if isinstance(target, Mapping) else target
        seen += 1
    return node


def _types(node: Mapping[str, Any]) -> set[str] | None:
    declared = node.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {str(t) for t in declared}
    values = _values_of(node)
    if values is not None:
        return {_json_type(v) for v in values}
    return None


def _values_of(node: Mapping[str, Any]) -> list[Any] | None:
    if "const" in node:
        return [node["const"]]
    if isinstance(node.get("enum"), list):
        return list(node["enum"])
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _describe(node: Any) -> str:
    if isinstance(node, Mapping):
        types = _types(node)
        if types:
            return " or ".join(sorted(types))
    return "any value"


def _alternatives(members: list[Any]) -> str:
    return "(" + ", ".join(_describe(m) for m in members) + ")"


def _list(values: Any) -> str:
    return ", ".join(repr(v) for v in values)


def _field(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _at(where: str) -> str:
    return f"field {where!r}" if where else "the payload"
