"""Durable waits: a stage's run can end in "waiting for input", and a signal resumes it.

A stage calls `ctx.wait_for(name, Model, timeout=...)`. The first time, the wait is unresolved:
wait_for raises `Waiting` (control flow), the executor turns it into an outcome, `decide` into
the `Wait` transition, and the completer writes it, fenced like every write of a claim: the job
becomes 'waiting' (no worker, lease or tenant slot; its attempt refunded) and its wait is
recorded in pipeline.waits with the model's JSON schema and a deadline. Nothing else of the run
is written: its follow-ups and on_complete steps are dropped, since the stage runs again.

`signal(conn, run_id, name, payload)` checks the payload against the recorded schema (the
caller needs no model class), resolves the wait and queues the job, in the caller's
transaction; the deadline does the same through the timeout service
(pipeline/maintenance/waits.py). Either way the stage runs again from the top, and this time
wait_for finds the wait resolved: it returns the payload as the model, or raises WaitTimedOut.
An answer the JSON schema let through but the model refuses (a validator) does not fail the
job: a person's mistake must not end it for good. wait_for waits again instead, the refusal
(which answer, pydantic's message) carried in the request to the job's last_error and the
attempt's row, and the `wait` statement reopens the wait, keeping its deadline while it is
still ahead.
So the code before a wait_for runs again on resume, and must be safe to repeat. A job may wait
on several names one after another: each one's resolution is kept, per (job, name).

Exactly one resume per wait: every statement that resolves a wait (sql/queries_waits.sql)
locks its job's row, resolves the wait only while it is still open, and queues the job only
if that resolved it; concurrent signals, a signal racing the deadline, and a cancel take turns
on the job's row, and the losers find the wait resolved (NoWaitingStep).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_jsonable_python

from pg_pipeline.errors import InvalidSignal, NoWaitingStep
from pg_pipeline.inputs import wait_name
from pg_pipeline.plans import Plan, Rows, Statement, Steps, sync_api
from pg_pipeline.queries import Q
from pg_pipeline.recorded_stages import schema_error_reason
from pg_pipeline.validation import max_payload_bytes, storable_json

#: Longest timeout: a hundred years, past which an interval overflows nothing but is a mistake.
TIMEOUT_MAX_S = 100 * 365 * 86400.0


@dataclass(frozen=True)
class WaitRequest:
    """What a run that ends in a wait asks the completer to record. JSON values throughout,
    checked storable when the stage asked (so the fenced write cannot be refused for them)."""

    name: str
    schema: str  #: the model's JSON schema, as JSON text
    timeout_s: float
    proposal: str | None = None  #: JSON text, or None
    detail: str | None = None  #: JSON text, or None
    #: Why a signalled answer was refused (the model's validators), when this waits again
    refusal: str | None = None


@dataclass(frozen=True)
class WaitRecord:
    """A wait of a job as ctx.wait_for finds it: resolution None while open."""

    resolution: str | None
    payload: Any
    deadline: datetime
    created_at: datetime
    resolved_at: datetime | None


#: (job id, wait name) -> the wait as recorded, or None when the job never waited on it
WaitReader = Callable[[int, str], WaitRecord | None]


def read_wait(conn: psycopg.Connection[Any], job_id: int, name: str) -> WaitRecord | None:
    row = conn.execute(Q["wait_record"], {"job_id": job_id, "name": name}).fetchone()
    return None if row is None else WaitRecord(*row)


def timeout_seconds(timeout: object) -> float:
    """A wait's timeout in seconds (a timedelta or a number), or ValueError."""
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or not 0 < seconds <= TIMEOUT_MAX_S
    ):
        raise ValueError(
            f"a wait's timeout is a timedelta or a number of seconds, above 0 and at most "
            f"{TIMEOUT_MAX_S:g}; got {timeout!r}"
        )
    return float(seconds)


def json_text(value: Any, what: str) -> str:
    """`value` (a pydantic model, a mapping, any JSON-able value) as storable JSON text, within
    the payload limit; ValueError naming `what` otherwise."""
    try:
        data = (
            value.model_dump(mode="json")
            if isinstance(value, BaseModel)
            else to_jsonable_python(value)
        )
        text = storable_json(data)
    except (PydanticSerializationError, ValueError, TypeError) as exc:
        raise ValueError(f"{what} cannot be stored as JSON: {exc}") from None
    limit = max_payload_bytes()
    if len(text.encode("utf-8")) > limit:
        raise ValueError(f"{what} is over the payload limit of {limit:,} bytes of JSON")
    return text


def wait_request(
    name: str,
    model: type[BaseModel],
    timeout: timedelta | float,
    proposal: BaseModel | Mapping[str, Any] | None,
    detail: Mapping[str, Any] | None,
) -> WaitRequest:
    """The request of ctx.wait_for, every argument checked."""
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"wait_for needs a pydantic model class, got {model!r}")
    name = wait_name(name)
    timeout_s = timeout_seconds(timeout)
    schema = json_text(model.model_json_schema(), f"the JSON schema of {model.__name__}")
    if detail is not None and not isinstance(detail, Mapping):
        raise TypeError(f"a wait's detail is a mapping of JSON values, got {type(detail).__name__}")
    return WaitRequest(
        name,
        schema,
        timeout_s,
        None if proposal is None else json_text(proposal, f"the proposal of wait {name!r}"),
        None if detail is None else json_text(dict(detail), f"the detail of wait {name!r}"),
    )


def wait_params(request: WaitRequest) -> dict[str, Any]:
    """The `wait` statement's parameters for `request`, beside the fence and the attempt's."""
    return {
        "name": request.name,
        "schema": request.schema,
        "proposal": request.proposal,
        "detail": request.detail,
        "timeout_s": request.timeout_s,
        "refusal": request.refusal,
    }


# -- signal ---------------------------------------------------------------------------------------


def signal_plan(
    run_id: int,
    name: str,
    payload: Any,
    *,
    job_id: int | None = None,
    tenant: str | None = None,
) -> Plan[int]:
    """Resume the run's job waiting on `name` with `payload`, in the caller's transaction;
    returns the job's id. `job_id` says which job when several of the run wait on that name;
    `tenant`, when set, keeps the signal to that tenant's waits. InvalidSignal when the
    payload does not fit the wait's schema, NoWaitingStep when nothing waits (the message
    says why); either way nothing changed."""
    if isinstance(run_id, bool) or not isinstance(run_id, int):
        raise TypeError(f"run_id is a run's id (an int), got {run_id!r}")
    if job_id is not None and (isinstance(job_id, bool) or not isinstance(job_id, int)):
        raise TypeError(f"job_id is a job's id (an int), got {job_id!r}")
    name = wait_name(name)
    try:
        text = json_text(payload, f"the payload of the signal {name!r}")
    except ValueError as exc:
        raise InvalidSignal(str(exc)) from None
    where = {"run_id": run_id, "name": name, "job_id": job_id, "tenant": tenant}
    return Plan(_signal_steps(where, text), atomic=True)


def _signal_steps(where: dict[str, Any], text: str) -> Steps[int]:
    targets = yield Statement(Q["signal_targets"], where)
    target = _pick(where, targets)
    if target is None:
        run = yield Statement(Q["signal_run"], where)
        raise NoWaitingStep(_why_none(where, run))
    job_id, schema = int(target[0]), target[1]
    _check_payload(where, job_id, schema, text)
    resumed = yield Statement(
        Q["signal"], {"job_id": job_id, "name": where["name"], "payload": text}
    )
    if not resumed:
        # Another signal, the deadline or a cancel resolved it since it was read: say which.
        again = yield Statement(Q["signal_targets"], {**where, "job_id": job_id})
        _pick({**where, "job_id": job_id}, again)  # raises for a resolved wait, saying how
        raise NoWaitingStep(f"{_what(where, job_id)} is no longer waiting")
    return int(resumed[0][0])


def _what(where: Mapping[str, Any], job_id: int | None = None) -> str:
    job = where["job_id"] if job_id is None else job_id
    of = f"job {job} of run {where['run_id']}" if job is not None else f"run {where['run_id']}"
    return f"wait {where['name']!r} of {of}"


def _pick(where: Mapping[str, Any], rows: Rows) -> tuple[Any, ...] | None:
    """The one open wait among `rows` (open ones first); NoWaitingStep for a resolved one or a
    choice to make; None when there are none (the caller asks the run why)."""
    if not rows:
        return None
    open_ = [row for row in rows if row[2] is None]
    if not open_:
        job_id, _, resolution, resolved_at, _, _ = rows[0]
        said = {"signalled": "was already signalled", "timed_out": "timed out"}
        how = said.get(resolution, "was cancelled")
        raise NoWaitingStep(f"{_what(where, job_id)} {how} at {resolved_at:%Y-%m-%d %H:%M:%S %Z}")
    if len(open_) > 1:
        jobs = ", ".join(str(row[0]) for row in open_)
        raise NoWaitingStep(
            f"{len(open_)} jobs of run {where['run_id']} wait on {where['name']!r} (jobs {jobs}):"
            " say which job (job_id=, or --job on the command line)"
        )
    row = open_[0]
    if row[5]:  # past its deadline: the timeout service is about to resume it as timed out
        raise NoWaitingStep(
            f"{_what(where, row[0])} timed out: its deadline passed at"
            f" {row[4]:%Y-%m-%d %H:%M:%S %Z}"
        )
    return row


def _why_none(where: Mapping[str, Any], rows: Rows) -> str:
    """Why the run has no wait by that name: it is not there, it ended, or it waits on others."""
    run_id, name = where["run_id"], where["name"]
    if not rows:
        # Another tenant's run is as if it did not exist; say so, as a rerun does.
        whose = "" if where["tenant"] is None else f" of tenant {where['tenant']!r}"
        return f"no run {run_id}{whose}"
    status, root_id, waiting_on, run_status = rows[0]
    if root_id is not None:
        # Both spellings: the caller may be Python code or an operator at the CLI.
        return (
            f"job {run_id} is not a run: it belongs to run {root_id}"
            f" (signal run {root_id} and say which job: job_id={run_id}, or --job {run_id})"
        )
    state = run_status or ("running" if status in ("queued", "running") else status)
    if state in ("done", "failed", "cancelled"):
        return f"run {run_id} is {state}: nothing of it waits on {name!r}"
    job = "" if where["job_id"] is None else f" (job {where['job_id']})"
    if where["job_id"] is not None and name in waiting_on:
        # The run does wait on the name, only not in that job: "not waiting on 'x'; it waits
        # on 'x'" would contradict itself.
        return (
            f"job {where['job_id']} of run {run_id} does not wait on {name!r}: another job of"
            f" the run does (`pipeline runs waiting` lists them; leave out the job to signal"
            f" the run's one job waiting on it)"
        )
    if waiting_on:
        others = ", ".join(repr(n) for n in waiting_on)
        return f"run {run_id}{job} is not waiting on {name!r}; it waits on {others}"
    return f"run {run_id}{job} is not waiting on {name!r}: it is {state}, nothing of it waits"


def _check_payload(where: Mapping[str, Any], job_id: int, schema: Any, text: str) -> None:
    payload = json.loads(text)
    errors = sorted(
        Draft202012Validator(schema).iter_errors(payload),
        key=lambda e: [str(p) for p in e.absolute_path],
    )
    if errors:
        raise InvalidSignal(
            f"the payload does not fit {_what(where, job_id)}: "
            + "; ".join(schema_error_reason(error) for error in errors)
        )


#: The public function; pg_pipeline.aio makes `asignal` from the same plan.
signal = sync_api(signal_plan)
