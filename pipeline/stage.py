"""Typed stages: a function of a pydantic model and a Context, with its queue settings."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from pg_pipeline import inputs
from pg_pipeline.errors import InvalidPayload, PermanentError, RetryableError, UnknownStage
from pg_pipeline.limits import Limit, check_limits
from pg_pipeline.retry_delays import BACKOFF_BASE_S, BACKOFF_CAP_S
from pg_pipeline.schema_fit import misfits
from pg_pipeline.validation import InvalidJob

MAX_ATTEMPTS_DEFAULT = 5  #: runs started before a job fails for good
LEASE_S_DEFAULT = 300  #: seconds a claim is owned without a heartbeat (five beats)
HEARTBEAT_S_DEFAULT = 60.0  #: seconds between heartbeats that extend the lease
#: seconds a run may take before it is stopped and retried; None means no limit. A hung stage
#: would otherwise hold its lease (heartbeats keep it alive) and its slot forever.
TIMEOUT_S_DEFAULT = 3600.0
#: "thread" runs a stage in one of the worker's threads; "process" in a child process of its
#: own, which a timeout or a cancel can really stop and whose crash is the job's alone.
Isolation = Literal["thread", "process"]

ExcTypes = tuple[type[BaseException], ...]


@dataclass(frozen=True)
class StageSpec:
    name: str
    fn: Callable[..., Any]
    input_model: type[BaseModel]
    output_model: type[BaseModel] | None = None
    max_attempts: int = MAX_ATTEMPTS_DEFAULT
    lease_s: int = LEASE_S_DEFAULT
    heartbeat_s: float = HEARTBEAT_S_DEFAULT
    timeout_s: float | None = TIMEOUT_S_DEFAULT
    priority: int = 0
    # When retry_on is given, only those errors retry and every other one is permanent.
    retry_on: ExcTypes | None = None
    permanent: ExcTypes = ()
    backoff_base_s: float = BACKOFF_BASE_S
    backoff_cap_s: float = BACKOFF_CAP_S
    # The stage that takes this stage's output as its input, when the pipeline is a straight line.
    then: str | None = None
    # Which part of the run an output belongs to (a page number); outputs are unique per
    # (run, stage, part).
    part: Callable[[Any], int] | None = None
    isolation: Isolation = "thread"
    # Running jobs of this stage one tenant may hold at once, across all workers; None: no cap.
    tenant_cap: int | None = None
    # @stage(version=...): the version of what the stage does, recorded with every output it
    # stores; None means a fingerprint of the function's code (code_version).
    declared_version: str | None = None
    # Rate limits every job of the stage is charged against at enqueue (pipeline/limits.py).
    limits: tuple[Limit, ...] = ()

    def __post_init__(self) -> None:
        check_limits(self.name, self.limits)
        if self.declared_version is not None:
            try:
                check_code_version(self.declared_version)
            except ValueError as exc:
                raise ValueError(f"stage {self.name!r}: {exc}") from None
        if self.max_attempts < 1:
            raise ValueError(f"stage {self.name!r}: max_attempts must be at least 1")
        if self.lease_s < 1:
            raise ValueError(f"stage {self.name!r}: lease must be at least 1 second")
        if not 0 < self.heartbeat_s < self.lease_s:
            raise ValueError(
                f"stage {self.name!r}: heartbeat ({self.heartbeat_s} s) must be shorter than "
                f"the lease ({self.lease_s} s), ideally a third of it or less"
            )
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ValueError(f"stage {self.name!r}: timeout must be positive")
        if self.isolation not in ("thread", "process"):
            raise ValueError(
                f"stage {self.name!r}: isolation must be 'thread' or 'process', "
                f"not {self.isolation!r}"
            )
        if self.tenant_cap is not None and (
            isinstance(self.tenant_cap, bool)
            or not isinstance(self.tenant_cap, int)
            or self.tenant_cap < 0
        ):
            raise ValueError(
                f"stage {self.name!r}: tenant_cap must be a whole number of jobs >= 0, "
                f"not {self.tenant_cap!r}"
            )
        try:
            inputs.priority(self.priority)
        except ValueError as exc:
            raise ValueError(f"stage {self.name!r}: {exc}") from None
        if self.then is not None and self.output_model is None:
            raise ValueError(f"stage {self.name!r}: then={self.then!r} needs an output model")

    @functools.cached_property
    def is_async(self) -> bool:
        """Whether the stage is an `async def`: asked for every run, and inspect's answer cost
        a measurable part of a no-op job."""
        return inspect.iscoroutinefunction(self.fn)

    @functools.cached_property
    def input_schema(self) -> dict[str, Any] | None:
        """The input model's JSON schema, as a payload must match it; None when a field's type
        has none."""
        return _json_schema(self.input_model, "validation")

    @functools.cached_property
    def output_schema(self) -> dict[str, Any] | None:
        """The output model's JSON schema, as its outputs are written (serialization mode)."""
        return (
            None if self.output_model is None else _json_schema(self.output_model, "serialization")
        )

    @functools.cached_property
    def version(self) -> str:
        """A fingerprint of the input model's JSON schema: what a worker advertises, so that one
        whose model rejects a payload can tell a worker running another version of the stage
        (which may accept it) from one running the same (which will not). Workers record each
        version's schema in pipeline.stages (pipeline/recorded_stages.py)."""
        schema: Any = self.input_schema
        if schema is None:  # a field type with no JSON schema: the fields as pydantic sees them
            schema = repr(sorted(self.input_model.model_fields.items()))
        text = json.dumps(schema, sort_keys=True, default=repr)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @functools.cached_property
    def code_version(self) -> str:
        """The version of what the stage does, stored with each of its outputs and recorded in
        pipeline.stages: @stage(version=...) when given, else a fingerprint of the function's
        code (code_fingerprint). A rerun (pg_pipeline.rerun) keeps outputs per version. Not
        `version`, which fingerprints the input model for rolling deploys."""
        if self.declared_version is not None:
            return self.declared_version
        return code_fingerprint(self.fn)

    def part_of(self, model: BaseModel) -> int | None:
        return None if self.part is None else int(self.part(model))

    def validate(self, payload: Any) -> BaseModel:
        """The payload as the stage's input model, or InvalidPayload with pydantic's message."""
        if isinstance(payload, self.input_model):
            return payload
        if isinstance(payload, BaseModel):
            payload = payload.model_dump(mode="json")
        try:
            # The validator itself, not model_validate: a bulk enqueue calls this per job.
            model: BaseModel = self.input_model.__pydantic_validator__.validate_python(payload)
        except ValidationError as exc:
            raise InvalidPayload(f"invalid payload for stage {self.name!r}: {exc}") from exc
        return model

    def is_permanent(self, exc: BaseException) -> bool:
        if isinstance(exc, PermanentError | ValidationError | InvalidPayload | InvalidJob):
            return True
        if isinstance(exc, RetryableError):
            return False
        if self.permanent and isinstance(exc, self.permanent):
            return True
        return self.retry_on is not None and not isinstance(exc, self.retry_on)


#: a declared code version's longest spelling: it is shown in tables and typed on command lines
CODE_VERSION_MAX = 64


def check_code_version(version: object) -> str:
    """`version` if it can name a stage's code version, else ValueError saying why."""
    if not isinstance(version, str):
        raise ValueError(f"version must be a string, not {type(version).__name__}")
    if not version.strip() or len(version) > CODE_VERSION_MAX:
        raise ValueError(f"version must be 1..{CODE_VERSION_MAX} characters, not {version!r}")
    if not version.isprintable() or version != version.strip():
        raise ValueError(f"version must be printable, without outer spaces: {version!r}")
    return version


def code_fingerprint(fn: Callable[..., Any]) -> str:
    """A fingerprint of `fn`'s code: its bytecode, constants (a prompt in a string literal
    counts) and the names it uses, recursively through nested functions and lambdas. The same
    in every process running the same source on the same Python; not its file or line, so
    moving it or editing another function leaves it. A new Python may compile the same source
    differently, and so change it: declare @stage(version=...) to control it exactly. The
    "code-" prefix tells it from a declared version."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:  # a callable object: its class's qualified name is all that is stable
        return "code-" + hashlib.sha256(type(fn).__qualname__.encode()).hexdigest()[:12]
    digest = hashlib.sha256()
    _hash_code(code, digest)
    return "code-" + digest.hexdigest()[:12]


def _hash_code(code: types.CodeType, digest: Any) -> None:
    digest.update(code.co_code)
    for name in (*code.co_names, "|", *code.co_varnames, "|", *code.co_freevars):
        digest.update(name.encode() + b"\0")
    for const in code.co_consts:
        _hash_const(const, digest)


def _hash_const(const: Any, digest: Any) -> None:
    if isinstance(const, types.CodeType):
        digest.update(b"<code>")
        _hash_code(const, digest)
    elif isinstance(const, tuple):
        digest.update(b"(")
        for item in const:
            _hash_const(item, digest)
        digest.update(b")")
    elif isinstance(const, frozenset):
        # A set's order follows string hashing, which differs from process to process.
        digest.update(b"{" + "\0".join(sorted(repr(c) for c in const)).encode() + b"}")
    else:
        digest.update(type(const).__name__.encode() + repr(const).encode() + b"\0")


def _json_schema(
    model: type[BaseModel], mode: Literal["validation", "serialization"]
) -> dict[str, Any] | None:
    try:
        return model.model_json_schema(mode=mode)
    except Exception:  # e.g. a field of an arbitrary type: pydantic has no schema for it
        return None


def chain_misfits(producer: StageSpec, target: StageSpec) -> list[str]:
    """Why `target`'s input model may refuse `producer`'s output (pg_pipeline.schema_fit), as far
    as their JSON schemas say; empty when it fits or a schema is missing."""
    if producer.output_schema is None or target.input_schema is None:
        return []
    return misfits(producer.output_schema, target.input_schema)


class ChainMisfit(ValueError):
    """A stage's then= names a stage whose input model refuses its output model."""


class Registry:
    """Stage name to spec. The default registry is filled by @stage at import time.

    A stage's then= target is checked when the second of the pair is added, whichever comes
    first in the code: an output the target's input refuses is refused here (ChainMisfit), at
    import, rather than failing every job of the stage once its work is done. A target that is
    never added is what check_chains() finds, once every app is loaded.
    """

    def __init__(self) -> None:
        self._stages: dict[str, StageSpec] = {}

    def add(self, spec: StageSpec) -> None:
        existing = self._stages.get(spec.name)
        if existing is not None and existing.fn is not spec.fn:
            raise ValueError(f"stage {spec.name!r} is defined twice")
        target = self._stages.get(spec.then) if spec.then is not None else None
        if spec.then == spec.name:
            target = spec
        pairs = [(spec, target)] if target is not None else []
        pairs += [
            (s, spec) for s in self._stages.values() if s.then == spec.name and s is not existing
        ]
        for producer, consumer in pairs:
            reasons = chain_misfits(producer, consumer)
            if reasons:
                raise ChainMisfit(
                    f"stage {producer.name!r} has then={consumer.name!r}, whose input model "
                    f"{consumer.input_model.__name__} does not take its output model "
                    f"{_name(producer.output_model)}: " + "; ".join(reasons)
                )
        self._stages[spec.name] = spec

    def check_chains(self, names: Iterable[str] | None = None) -> None:
        """ValueError when a stage of `names` (all by default) names a then= target that is
        not registered: its jobs would do their work and then fail for good."""
        for spec in self.select(names):
            if spec.then is not None and spec.then not in self._stages:
                known = ", ".join(self.names())
                raise ValueError(
                    f"stage {spec.name!r}: then={spec.then!r} names no registered stage "
                    f"(registered: {known}); load the app that defines it too"
                )

    def get(self, name: str) -> StageSpec:
        try:
            return self._stages[name]
        except KeyError:
            raise UnknownStage(name, self.names()) from None

    def get_or_none(self, name: str) -> StageSpec | None:
        return self._stages.get(name)

    def names(self) -> list[str]:
        return sorted(self._stages)

    def select(self, names: Iterable[str] | None) -> list[StageSpec]:
        wanted = list(names) if names else self.names()
        return [self.get(n) for n in wanted]

    def __contains__(self, name: object) -> bool:
        return name in self._stages


def _name(model: type[BaseModel] | None) -> str:
    return "None" if model is None else model.__name__


REGISTRY = Registry()

F = TypeVar("F", bound=Callable[..., Any])


def _models_of(fn: Callable[..., Any]) -> tuple[type[BaseModel], type[BaseModel] | None]:
    hints = typing.get_type_hints(fn)
    params = [p for p in fn.__code__.co_varnames[: fn.__code__.co_argcount]]
    if len(params) != 2:
        raise TypeError(f"{fn.__qualname__} must take (job: Model, ctx: Context)")
    model = hints.get(params[0])
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"{fn.__qualname__}: annotate the first parameter with a pydantic model")
    output = hints.get("return")
    if output is type(None):
        output = None
    # `Model | None`: the stage may return nothing, in which case no output is stored.
    members = [a for a in typing.get_args(output) if a is not type(None)]
    if typing.get_origin(output) in (typing.Union, types.UnionType) and len(members) == 1:
        output = members[0]
    if output is not None and not (isinstance(output, type) and issubclass(output, BaseModel)):
        raise TypeError(f"{fn.__qualname__}: return annotation must be a pydantic model or None")
    return model, output


def stage(
    name: str,
    *,
    max_attempts: int = MAX_ATTEMPTS_DEFAULT,
    lease: int = LEASE_S_DEFAULT,
    heartbeat: float | None = None,
    timeout: float | None = TIMEOUT_S_DEFAULT,
    priority: int = 0,
    retry_on: ExcTypes | None = None,
    permanent: ExcTypes = (),
    backoff_base: float = BACKOFF_BASE_S,
    backoff_cap: float = BACKOFF_CAP_S,
    then: str | None = None,
    part: Callable[[Any], int] | None = None,
    isolation: Isolation = "thread",
    tenant_cap: int | None = None,
    version: str | None = None,
    limits: Iterable[Limit] = (),
    registry: Registry | None = None,
) -> Callable[[F], F]:
    """Register `fn(job: Model, ctx: Context) -> Output | None` as the stage `name`; `fn` may
    be `async def` (run on the worker's event loop: see pipeline/async_stages.py).

    lease, heartbeat and timeout are seconds; heartbeat defaults to a fifth of the lease (at most
    60 s); timeout defaults to an hour, and None removes it. isolation="process" runs each job in
    a child process of its own (a timeout then kills it; its module must be importable).
    tenant_cap=N lets one tenant hold at most N running jobs of this stage across all workers.
    version="2" names the version of what the stage does (default: a fingerprint of its code,
    StageSpec.code_version); every output is stored with it, and `pipeline runs rerun` keeps
    the outputs of each version apart. limits=[Limit("llm-tokens", key=..., units=...)]
    charges every job against rate limits at enqueue; a claim admits it only while the
    limit's window has room (pipeline/limits.py, docs/limits.md). A returned output is stored
    under (run, stage, part(job)) in the completing transaction; with then="next", it also
    becomes the input of a "next" job enqueued in that transaction.
    """

    def register(fn: F) -> F:
        model, output = _models_of(fn)
        beat = heartbeat if heartbeat is not None else min(HEARTBEAT_S_DEFAULT, lease / 5)
        spec = StageSpec(
            name=name,
            fn=fn,
            input_model=model,
            output_model=output,
            max_attempts=max_attempts,
            lease_s=lease,
            heartbeat_s=beat,
            timeout_s=timeout,
            priority=priority,
            retry_on=retry_on,
            permanent=permanent,
            backoff_base_s=backoff_base,
            backoff_cap_s=backoff_cap,
            then=then,
            part=part,
            isolation=isolation,
            tenant_cap=tenant_cap,
            declared_version=version,
            limits=tuple(limits),
        )
        (registry if registry is not None else REGISTRY).add(spec)
        return fn

    return register
