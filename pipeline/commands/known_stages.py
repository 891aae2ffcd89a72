"""Which stage an operator command may name, and whether a payload suits it.

A command that only writes rows (a tenant's cap, a schedule, a job) needs no stage code to run:
with --app it checks against the code it loads, as it always did; without, a stage that code
loaded anyway (PIPELINE_APP, installed plugins) is checked against that code, and any other
against what workers recorded of it (pg_pipeline.recorded_stages), so an operator's machine needs
only the database.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from pydantic import ValidationError

from pg_pipeline.commands.api import EXIT_USAGE, CliError, load_apps
from pg_pipeline.errors import InvalidPayload, UnknownStage
from pg_pipeline.recorded_stages import RecordedStage, check_payload, recorded_stages
from pg_pipeline.stage import REGISTRY
from pg_pipeline.validation import storable_json

#: No payload to check (a cap names the stage only).
NO_PAYLOAD: Any = object()


def check_stage(
    conn: psycopg.Connection[Any], stage: str, apps: list[str], payload: Any = NO_PAYLOAD
) -> None:
    """CliError (exit 2) unless `stage` is a stage the command may name and `payload` (when
    given) a payload it takes."""
    load_apps(apps)
    try:
        spec = REGISTRY.get_or_none(stage)
        if spec is not None:
            if payload is not NO_PAYLOAD:
                spec.validate(payload)
            return
        if apps:  # the code given decides
            raise UnknownStage(stage, REGISTRY.names())
        versions = recorded(conn, stage)
        if payload is not NO_PAYLOAD:
            check_payload(stage, versions, json.loads(storable_json(payload)))
    except (UnknownStage, InvalidPayload, ValueError) as exc:
        raise CliError(one_line(exc, stage), EXIT_USAGE) from exc


def recorded(conn: psycopg.Connection[Any], stage: str) -> list[RecordedStage]:
    """The versions of `stage` workers recorded; UnknownStage, naming every stage known here
    or recorded, when there are none."""
    every = recorded_stages(conn)
    versions = [v for v in every if v.name == stage]
    if not versions:
        known = sorted({*REGISTRY.names(), *(v.name for v in every)})
        raise UnknownStage(stage, known, recorded=True)
    return versions


def one_line(exc: Exception, stage: str) -> str:
    """The reason on one line; pydantic's report as field and reason per error."""
    cause = exc.__cause__
    if isinstance(exc, InvalidPayload) and isinstance(cause, ValidationError):
        reasons = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'payload'}: {e['msg']}" for e in cause.errors()
        )
        return f"invalid payload for stage {stage!r}: {reasons}"
    return " ".join(str(exc).split())
