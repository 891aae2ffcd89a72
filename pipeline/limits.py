"""Rate limits in units per key (docs/limits.md): what a stage declares, and what each job is
charged at enqueue.

`@stage(limits=[Limit("llm-tokens", key=Limit.field("endpoint"), units=Limit.field("max_tokens"),
actual=("tokens_in", "tokens_out"))])`: every job of the stage is charged `units` against the
limit's `key` when it is enqueued (a payload field, a constant, the tenant, or a function of the
validated payload); the claim admits it only while the key's window has room
(sql/functions/admit_limited.sql), and after the run the charge is corrected by what the stage
reported (`ctx.usage(...)`, the counters `actual` names). The capacity lives in the database
(`pipeline limits set`), or comes from code as a default (Limit(capacity=, per=)).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pg_pipeline.validation import InvalidJob
from pg_pipeline.vocabulary import ONE_KEY

if TYPE_CHECKING:  # annotations alone: `pipeline status` reads limits without pydantic
    from pydantic import BaseModel

#: key="tenant": the job's tenant is the key; a job without one is charged to NO_TENANT_KEY
TENANT = "tenant"
NO_TENANT_KEY = "-"
#: longest limit name and key: they are shown in tables and typed on command lines
NAME_MAX = 100
KEY_MAX = 200
PER_MAX_S = 86400  #: the longest window (the table's check says the same)
#: the most units one job is charged: windows and queues sum charges in bigint columns, which a
#: few larger ones would overflow, failing every claim of the stage and every report
UNITS_MAX = 10**15


@dataclass(frozen=True)
class FromPayload:
    """A payload field (dotted for a nested one: "request.model"), read from the JSON the
    payload is stored as, so that a job enqueued by name is charged as one enqueued from code."""

    path: str

    def read(self, payload: Any) -> Any:
        value = payload
        for part in self.path.split("."):
            if not isinstance(value, Mapping) or part not in value:
                raise KeyError(self.path)
            value = value[part]
        return value


Counters = Mapping[str, "float | str"]
KeySpec = str | FromPayload | Callable[[Any], Any] | None
UnitsSpec = int | FromPayload | Callable[[Any], Any]
ActualSpec = str | Sequence[str] | Callable[[Counters], float] | None


@dataclass(frozen=True)
class Charge:
    """One job's charge against one limit: what the claim checks and the correction amends."""

    name: str
    key: str
    units: int

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "key": self.key, "units": self.units}


@dataclass(frozen=True)
class Limit:
    """A rate limit a stage's jobs are charged against.

    name: the limit (one capacity per key, `pipeline limits set NAME ...`); several stages may
    share it. key: None (every job shares one key), "tenant" (the job's tenant), another string
    (that constant), Limit.field("api_key") (a payload field), or a callable of the validated
    payload. units: an int (default 1), Limit.field(...) or a callable; a whole number >= 0
    (a fraction is rounded up). actual: the usage counter (`ctx.usage(tokens=...)`), counters
    (summed) or a callable of the counters that says what the job really used; after the run
    its charge is corrected by the difference. capacity and per: the default capacity, `units`
    per `per` seconds, used while no operator set one; without either the limit has no capacity
    until `pipeline limits set`, and then charges nothing and holds nothing back.
    """

    name: str
    key: KeySpec = None
    units: UnitsSpec = 1
    actual: ActualSpec = None
    capacity: int | None = None
    per: int = 60

    field = staticmethod(FromPayload)

    def __post_init__(self) -> None:
        _check_text("limit name", self.name, NAME_MAX)
        if isinstance(self.key, str):
            _check_text(f"limit {self.name!r}: key", self.key, KEY_MAX)
        elif not (self.key is None or isinstance(self.key, FromPayload) or callable(self.key)):
            raise ValueError(
                f"limit {self.name!r}: key must be None, a string, Limit.field(...) or a "
                f"function of the payload, not {self.key!r}"
            )
        if isinstance(self.units, bool) or not (
            isinstance(self.units, int | FromPayload) or callable(self.units)
        ):
            raise ValueError(
                f"limit {self.name!r}: units must be a whole number, Limit.field(...) or a "
                f"function of the payload, not {self.units!r}"
            )
        if isinstance(self.units, int) and not 0 <= self.units <= UNITS_MAX:
            raise ValueError(
                f"limit {self.name!r}: units must be >= 0 and at most {UNITS_MAX}, not {self.units}"
            )
        if isinstance(self.actual, str):
            _check_text(f"limit {self.name!r}: actual", self.actual, NAME_MAX)
        elif isinstance(self.actual, Sequence):
            if not self.actual or not all(isinstance(a, str) and a for a in self.actual):
                raise ValueError(f"limit {self.name!r}: actual must name usage counters")
            object.__setattr__(self, "actual", tuple(self.actual))  # a list: hashable as well
        elif self.actual is not None and not callable(self.actual):
            raise ValueError(
                f"limit {self.name!r}: actual must be a counter's name, names, or a function "
                f"of the counters, not {self.actual!r}"
            )
        check_capacity(self.capacity, self.per, f"limit {self.name!r}: ")

    def charge(
        self, payload_json: Any, model: Callable[[], BaseModel], tenant: str | None
    ) -> Charge:
        """This limit's charge for one job: `payload_json` is the payload as stored (JSON
        values), `model` gives the validated payload, for a callable spec."""
        return Charge(
            self.name, self._key(payload_json, model, tenant), self._units(payload_json, model)
        )

    def _key(self, payload: Any, model: Callable[[], BaseModel], tenant: str | None) -> str:
        spec = self.key
        if spec is None:
            return ONE_KEY
        if spec == TENANT:
            return tenant if tenant is not None else NO_TENANT_KEY
        if isinstance(spec, str):
            return spec
        value = self._read(spec, payload, model, "key")
        if value is None or isinstance(value, bool | Mapping | list):
            raise InvalidJob(
                f"limit {self.name!r}: the key must be a string or a number, not {value!r}"
            )
        key = str(value)
        if not key or len(key) > KEY_MAX:
            raise InvalidJob(f"limit {self.name!r}: the key must be 1..{KEY_MAX} characters")
        return key

    def _units(self, payload: Any, model: Callable[[], BaseModel]) -> int:
        spec = self.units
        if isinstance(spec, int):
            return spec
        value = self._read(spec, payload, model, "units")
        return whole_units(value, f"limit {self.name!r}: units")

    def _read(
        self,
        spec: FromPayload | Callable[[Any], Any],
        payload: Any,
        model: Callable[[], BaseModel],
        what: str,
    ) -> Any:
        if isinstance(spec, FromPayload):
            try:
                return spec.read(payload)
            except KeyError:
                raise InvalidJob(
                    f"limit {self.name!r}: the payload has no field {spec.path!r} for its {what}"
                ) from None
        return spec(model())

    def actual_units(self, counters: Counters) -> int | None:
        """What the job really used, from the stage's usage counters; None when they do not
        say (the estimate stands)."""
        spec = self.actual
        if spec is None:
            return None
        if callable(spec):
            value: Any = spec(counters)
        else:
            names = [spec] if isinstance(spec, str) else list(spec)
            values = [counters.get(n) for n in names]
            if all(v is None for v in values):
                return None
            value = sum(float(v) for v in values if isinstance(v, int | float))
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool) and value > UNITS_MAX:
            value = UNITS_MAX  # more than any window holds: the window is full either way
        return whole_units(value, f"limit {self.name!r}: actual")

    def recorded(self) -> dict[str, Any]:
        """The limit as a worker records it with its stage (pipeline.stages.limits): enough to
        charge a job enqueued by name, without the code, unless key or units is a callable."""
        return {
            "name": self.name,
            "key": _recorded_spec(self.key if self.key is not None else ONE_KEY, is_key=True),
            "units": _recorded_spec(self.units, is_key=False),
        }


def _recorded_spec(spec: Any, *, is_key: bool) -> dict[str, Any]:
    if is_key and spec == TENANT:
        return {"tenant": True}
    if isinstance(spec, str | int):
        return {"const": spec}
    if isinstance(spec, FromPayload):
        return {"field": spec.path}
    return {"code": getattr(spec, "__qualname__", type(spec).__name__)}


def recorded_charges(
    stage: str, recorded: Sequence[Mapping[str, Any]], payload: Any, tenant: str | None
) -> list[Charge]:
    """The charges of a job enqueued by name, from its stage's recorded limits; InvalidJob when
    a limit computes its key or units in code, which only an enqueue from that code can run."""
    charges = []
    for item in recorded:
        specs: list[Any] = []
        for part in ("key", "units"):
            spec = item[part]
            if "code" in spec:
                raise InvalidJob(
                    f"stage {stage!r}: limit {item['name']!r} computes its {part} in code "
                    f"({spec['code']}); enqueue its jobs from code that imports the stage"
                )
            specs.append(
                TENANT
                if "tenant" in spec
                else FromPayload(spec["field"])
                if "field" in spec
                else spec["const"]
            )
        charges.append(
            Limit(item["name"], key=specs[0], units=specs[1]).charge(payload, _no_model, tenant)
        )
    return charges


def _no_model() -> BaseModel:
    raise AssertionError("a recorded limit has no callable")  # pragma: no cover


def charges_json(charges: Sequence[Charge]) -> str | None:
    """The job row's `limits` column: JSON text, or None without charges."""
    if not charges:
        return None
    return json.dumps([c.as_json() for c in charges], separators=(",", ":"))


def whole_units(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidJob(f"{what} must be a number, not {value!r}")
    if value < 0:
        raise InvalidJob(f"{what} must be >= 0, not {value!r}")
    if value > UNITS_MAX:
        raise InvalidJob(f"{what} must be at most {UNITS_MAX}, not {value!r}")
    return math.ceil(value)


def check_capacity(capacity: int | None, per: int, prefix: str = "") -> None:
    if capacity is not None and (
        isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0
    ):
        raise ValueError(f"{prefix}capacity must be a whole number of units >= 0, not {capacity!r}")
    if isinstance(per, bool) or not isinstance(per, int) or not 1 <= per <= PER_MAX_S:
        raise ValueError(f"{prefix}per must be whole seconds within 1..{PER_MAX_S}, not {per!r}")


def check_limits(stage: str, limits: Sequence[Limit]) -> None:
    names = [limit.name for limit in limits]
    if not all(isinstance(limit, Limit) for limit in limits):
        raise ValueError(f"stage {stage!r}: limits must be Limit(...) values")
    if len(set(names)) != len(names):
        raise ValueError(f"stage {stage!r}: a limit is named twice in {names}")


def _check_text(what: str, value: Any, longest: int) -> None:
    if not isinstance(value, str) or not value or len(value) > longest:
        raise ValueError(f"{what} must be 1..{longest} characters, not {value!r}")
    if not value.isprintable() or value != value.strip():
        raise ValueError(f"{what} must be printable, without outer spaces: {value!r}")
