"""Runs one job and maps its outcome to the one fenced write that settles it."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from pipeline.backoff import retry_delay
from pipeline.context import Context
from pipeline.errors import InvalidPayload, LeaseLost
from pipeline.stage import StageSpec
from pipeline.store import ClaimedJob, JobStore

log = logging.getLogger(__name__)

MAX_ERROR_CHARS = 4000  #: last_error keeps the message and the innermost frames, not megabytes


@dataclass(frozen=True)
class Succeeded:
    output: BaseModel | None


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


def run_job(spec: StageSpec, job: ClaimedJob, ctx: Context) -> Outcome:
    """Validate the payload as it is now, call the stage, and classify what happened."""
    try:
        model = spec.validate(job.payload)
    except InvalidPayload as exc:
        return Errored(f"payload no longer valid: {exc}", permanent=True)
    try:
        result = spec.fn(model, ctx)
        if spec.output_model is not None and result is not None:
            result = spec.output_model.model_validate(result)
    except LeaseLost as exc:
        return Lost(str(exc))
    except Exception as exc:
        return Errored(describe_error(exc), permanent=spec.is_permanent(exc))
    return Succeeded(result if isinstance(result, BaseModel) else None)


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
        steps = ctx.transaction_steps
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
