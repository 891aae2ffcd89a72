"""Where a rule read a value, and how sure it is: the record every field rule returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, TypeVar

_V = TypeVar("_V")


@dataclass(frozen=True)
class _Ev:
    line: int  # index into the normalised lines
    rule: str
    confidence: float
    span: int = 0  # lines after the label line that the value was read from
    source: str | None = None  # what the value was read from, when it is no line of the text


_Result: TypeAlias = tuple[_V | None, _Ev | None]
