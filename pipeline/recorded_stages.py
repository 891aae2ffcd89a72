"""The stages as workers recorded them (pipeline.stages), for code that does not import them.

Each worker writes its stages when it starts: per version of a stage's input model (the
fingerprint it already advertises in pipeline.workers.stage_versions, StageSpec.version) the
input model's JSON schema, the output's, then= and the defaults a job takes. A producer that
enqueues by name (`enqueue(conn, "classify", {...})` without the module that defines
"classify") and the operator commands run without --app read them here: the name is known if
a worker recorded it, and a payload is valid if it matches the JSON schema of a version that
a live worker runs (the version recorded last when none is live: the workers may all be down
for a deploy). The worker still validates with its model when it claims the job, as for every
job. Old versions stay recorded (a row per version of a stage's input model), unused.

A JSON schema is stricter than pydantic's lax mode in places ("5" is not an integer to it), so
a payload it refuses may be one the model would have coerced: send it typed, or enqueue with
validate=False to leave the check to the claim.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import best_match  # type: ignore[import-untyped]
from psycopg.types.json import Jsonb

from pg_pipeline.errors import InvalidPayload
from pg_pipeline.plans import Plan, Statement, Steps, sync_api
from pg_pipeline.queries import Q
from pg_pipeline.stage import StageSpec

#: A worker whose last heartbeat is older than this does not count as running its versions
#: (pg_pipeline.worker.versions.ALIVE_S, the same question asked for the same reason).
ALIVE_S = 180.0


@dataclass(frozen=True)
class RecordedStage:
    """One version of a stage, as the last worker to start with it recorded it."""

    name: str
    version: str
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    then: str | None
    max_attempts: int
    lease_s: int
    priority: int
    tenant_cap: int | None
    recorded_by: uuid.UUID
    hostname: str
    updated_at: datetime
    live: bool  # a worker that beat within ALIVE_S runs this version
    #: the stage's code version (StageSpec.code_version) as the last worker to record it runs
    #: it; None when recorded before code versions were
    code_version: str | None = None
    #: the stage's limits as recorded (Limit.recorded()); None when it has none
    limits: list[dict[str, Any]] | None = None


def record_of(spec: StageSpec) -> dict[str, Any]:
    """What a worker records of one of its stages."""
    return {
        "name": spec.name,
        "version": spec.version,
        "input_schema": spec.input_schema,
        "output_schema": spec.output_schema,
        "then_stage": spec.then,
        "max_attempts": spec.max_attempts,
        "lease_seconds": spec.lease_s,
        "priority": spec.priority,
        "tenant_cap": spec.tenant_cap,
        "code_version": spec.code_version,
        "limits": [limit.recorded() for limit in spec.limits] or None,
    }


def record_stages_plan(
    specs: Iterable[StageSpec], worker_id: uuid.UUID, hostname: str
) -> Plan[None]:
    """Record `specs` as run by the worker `worker_id`: one statement, whatever their number."""
    params = {
        "stages": Jsonb([record_of(spec) for spec in specs]),
        "worker_id": worker_id,
        "hostname": hostname,
    }
    return Plan(_no_rows(Statement(Q["record_stages"], params)))


def _no_rows(statement: Statement) -> Steps[None]:
    yield statement


def recorded_stages_plan(names: Sequence[str] | None = None) -> Plan[list[RecordedStage]]:
    """The recorded versions of the stages `names` (every stage when None), the latest recorded
    first within a stage."""
    return Plan(read_steps(names))


def read_steps(names: Sequence[str] | None) -> Steps[list[RecordedStage]]:
    rows = yield Statement(
        Q["recorded_stages"], {"names": None if names is None else list(names), "alive_s": ALIVE_S}
    )
    return [RecordedStage(*row) for row in rows]


def names_steps() -> Steps[list[str]]:
    """Every recorded stage's name, for an error that says which names are known."""
    return [str(row[0]) for row in (yield Statement(Q["recorded_stage_names"], {}))]


record_stages = sync_api(record_stages_plan)
recorded_stages = sync_api(recorded_stages_plan)


def by_name(found: Iterable[RecordedStage]) -> dict[str, list[RecordedStage]]:
    grouped: dict[str, list[RecordedStage]] = {}
    for stage in found:
        grouped.setdefault(stage.name, []).append(stage)
    return grouped


def current(versions: Sequence[RecordedStage]) -> list[RecordedStage]:
    """The versions a job enqueued now would meet: those live workers run, or, when no worker
    runs any (all down for a deploy), the one recorded last, which the next to start most
    likely runs again; not older ones, whose workers may be long gone."""
    live = [v for v in versions if v.live]
    return live or list(versions[:1])


def schema_error_reason(error: Any) -> str:
    """One jsonschema error as a reason an operator reads: the field it is about, and why."""
    where = ".".join(str(p) for p in error.absolute_path)
    return f"{'field ' + repr(where) if where else 'payload'}: {error.message}"


def check_payload(name: str, versions: Sequence[RecordedStage], payload: Any) -> None:
    """InvalidPayload unless `payload` (JSON values, as it will be stored) matches the input
    schema of one of the stage's current versions; a version without a schema takes anything."""
    reasons: list[str] = []
    for version in current(versions):
        if version.input_schema is None:
            return
        error = best_match(_validator(version).iter_errors(payload))
        if error is None:
            return
        reasons.append(schema_error_reason(error))
    several = " (matching no version workers run)" if len(reasons) > 1 else ""
    raise InvalidPayload(
        f"invalid payload for stage {name!r}, as workers recorded it{several}: "
        + "; ".join(dict.fromkeys(reasons))
    )


_validators: dict[tuple[str, str], Any] = {}
_validators_lock = threading.Lock()
#: Validators kept: one per (stage, version) a producer enqueues by name; building one is the
#: cost of a few enqueues, keeping them all is a few KiB each.
_VALIDATORS_MAX = 512


def _validator(version: RecordedStage) -> Any:
    # Keyed by the fingerprint of the schema itself, so a new version is a new entry.
    key = (version.name, version.version)
    with _validators_lock:
        found = _validators.get(key)
        if found is None:
            if len(_validators) >= _VALIDATORS_MAX:
                _validators.clear()
            found = _validators[key] = Draft202012Validator(version.input_schema)
    return found


def defaults(versions: Mapping[str, Sequence[RecordedStage]], name: str) -> RecordedStage | None:
    """The version whose defaults (attempts, lease, priority) a job enqueued by name takes."""
    found = current(versions.get(name, ()))
    return found[0] if found else None
