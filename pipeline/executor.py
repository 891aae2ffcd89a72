"""Runs one job and maps its outcome to the one fenced write that settles it."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from pydantic import BaseModel

from pipeline.backoff import retry_delay
from pipeline.context import Context, TransactionStep
from pipeline.errors import InvalidPayload, LeaseLost
from pipeline.queries import Q
from pipeline.stage import StageSpec
from pipeline.store import ClaimedJob, JobStore

log = logging.getLogger(__name__)

MAX_ERROR_CHARS = 4000  #: last_error keeps the message and the innermost frames, not megabytes


@dataclass(frozen=True)
class Succeeded:
    output: BaseModel | None
    reused: bool = False  # an earlier run stored this output; nothing ran, nothing is redone
    part: int = 0  # which part of the run the output belongs to (see StageSpec.part)


@dataclass(frozen=True)
class Errored:
    message: str
    permanent: bool


@dataclass(frozen=True)
class TimedOut:
    after_s: float


@dataclass(frozen=True)
class Lost:
    reason: str


Outcome = Succeeded | Errored | TimedOut | Lost


def describe_error(exc: BaseException) -> str:
    head = f"{type(exc).__name__}: {exc}"
    frames = traceback.format_tb(exc.__traceback__)[-3:]
    text = head + ("\n" + "".join(frames) if frames else "")
    return text[:MAX_ERROR_CHARS]


#: (run id, stage, part) -> the stored output as JSON, or None
OutputFinder = Callable[[int, str, int], Any]


def run_job(
    spec: StageSpec, job: ClaimedJob, ctx: Context, find_output: OutputFinder | None = None
) -> Outcome:
    """Validate the payload as it is now, call the stage, and classify what happened.

    A stage whose output is already stored for this (run, stage, part) is not called again:
    the work was committed by an earlier run, and redoing it would redo its side effects.
    """
    try:
        model = spec.validate(job.payload)
    except InvalidPayload as exc:
        return Errored(f"payload no longer valid: {exc}", permanent=True)
    try:
        part = spec.part_of(model)
        if spec.output_model is not None and find_output is not None:
            stored = find_output(job.root_id, spec.name, part)
            if stored is not None:
                return Succeeded(spec.output_model.model_validate(stored), reused=True, part=part)
        result = spec.fn(model, ctx)
        if spec.output_model is not None and result is not None:
            result = spec.output_model.model_validate(result)
            if spec.then is not None:
                # The output is the next stage's input; one that does not fit fails this job.
                ctx.enqueue(spec.then, result)
    except LeaseLost as exc:
        return Lost(str(exc))
    except Exception as exc:
        return Errored(describe_error(exc), permanent=spec.is_permanent(exc))
    return Succeeded(result if isinstance(result, BaseModel) else None, part=part)


def settle(
    store: JobStore,
    spec: StageSpec,
    job: ClaimedJob,
    ctx: Context,
    outcome: Outcome,
    acknowledge: Callable[[], None],
) -> str:
    """The single place where an outcome becomes a state. Returns what was written:
    'done', 'queued' (retry later), 'failed', 'acked' (done, in the next ack batch) or 'lost'.

    A timeout is written by the worker when it fires, while the stage may still be running;
    whatever the stage returns after that finds lost_lease set and writes nothing.
    """
    if ctx.lost_lease.is_set() and not isinstance(outcome, TimedOut):
        return "lost"
    if isinstance(outcome, Lost):
        return "lost"
    if isinstance(outcome, Succeeded):
        steps = [] if outcome.reused else _completion_steps(spec, job, ctx, outcome)
        if not steps:
            acknowledge()
            return "acked"
        try:
            store.complete_with(job, steps)
        except LeaseLost:
            return "lost"
        return "done"
    if isinstance(outcome, TimedOut):
        message, permanent = f"timed out after {outcome.after_s:g} s", False
    else:
        message, permanent = outcome.message, outcome.permanent
    delay = retry_delay(job.attempts, base_s=spec.backoff_base_s, cap_s=spec.backoff_cap_s)
    written = store.fail(job, message, permanent=permanent, delay_s=delay)
    return "lost" if written is None else written[0]


def _completion_steps(
    spec: StageSpec, job: ClaimedJob, ctx: Context, outcome: Succeeded
) -> list[TransactionStep]:
    """What commits with the job's completion: its output first, then its follow-ups."""
    output = outcome.output
    if output is None:
        return ctx.transaction_steps
    row = {
        "root_id": job.root_id,
        "stage": spec.name,
        "part": outcome.part,
        "job_id": job.id,
        "attempt": job.attempts,
        "output": Jsonb(output.model_dump(mode="json")),
    }

    def save(conn: psycopg.Connection[Any]) -> None:
        conn.execute(Q["save_output"], row)

    return [save, *ctx.transaction_steps]
