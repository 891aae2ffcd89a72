"""Runs one job and says what happened, as a RunResult. It writes nothing: see outcomes.decide
for what an outcome becomes, and the completer for the write."""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import psycopg
from pydantic import BaseModel

from pg_pipeline.async_stages import run_coroutine
from pg_pipeline.context import Context
from pg_pipeline.db import unavailable
from pg_pipeline.errors import DatabaseUnavailable, InvalidPayload, LeaseLost, Waiting, WaitTimedOut
from pg_pipeline.outcomes import (
    MAX_ERROR_CHARS,
    Lost,
    Raised,
    RunResult,
    Succeeded,
    Unfit,
    WaitingForInput,
)
from pg_pipeline.stage import StageSpec
from pg_pipeline.store import ClaimedJob
from pg_pipeline.tracing import record_error
from pg_pipeline.usage import CpuOfSteps

#: What most runs of a no-op or side-effect-only stage produce: one shared, since a frozen
#: dataclass per job was a measurable part of such a job's cost to the worker.
NOTHING = Succeeded(None)


#: job id -> the output that very job stored on an earlier run, as JSON, or None
#: (pipeline.runs.job_output; not run_output, which reads a run's output of a stage)
JobOutputReader = Callable[[int], Any]


def describe_error(exc: BaseException) -> str:
    head = f"{type(exc).__name__}: {exc}"
    frames = traceback.format_tb(exc.__traceback__)[-3:]
    text = head + ("\n" + "".join(frames) if frames else "")
    return text[:MAX_ERROR_CHARS]


def validated(spec: StageSpec, job: ClaimedJob) -> BaseModel | Unfit:
    """The payload as this worker's input model of the stage, or Unfit saying why not."""
    try:
        return spec.validate(job.payload)
    except InvalidPayload as exc:
        return Unfit(f"payload no longer valid: {exc}")


def run_job(
    spec: StageSpec, job: ClaimedJob, ctx: Context, job_output: JobOutputReader | None = None
) -> RunResult:
    """Validate the payload as it is now, call the stage, and classify what happened.

    A job whose output is already stored is not called again: an earlier run of this very job
    committed its work, and redoing it would redo its side effects. Never raises.

    Measures the run into ctx.usage_record: its seconds, and the CPU of this thread (the
    stage's, for a sync stage) plus that of an async stage's steps on the loop's thread. The
    thread's CPU is read once per run, at its end (a reading costs a system call, 1.3 us, a
    measurable part of a no-op job): the CPU since this thread's previous run ended, which adds
    the few microseconds of the thread's own bookkeeping between two runs to the stage's. A
    caller that does more on the thread between runs (writes a completion itself) calls
    forget_thread_cpu() after it, so the next run reads its own start.
    """
    usage = ctx.usage_record
    began = usage.began = time.perf_counter()
    cpu_began = getattr(_thread_cpu, "last", None)
    if cpu_began is None:
        cpu_began = time.thread_time()
    try:
        return _run_job(spec, job, ctx, job_output)
    finally:
        _thread_cpu.last = cpu_now = time.thread_time()
        usage.cpu_s = cpu_now - cpu_began + usage.steps_cpu_s
        usage.wall_s = time.perf_counter() - began


#: per thread: its CPU seconds (time.thread_time) when its last run ended
_thread_cpu = threading.local()


def forget_thread_cpu() -> None:
    """This thread did work of its own since its last run: the next run reads its start."""
    _thread_cpu.__dict__.pop("last", None)


def _run_job(
    spec: StageSpec, job: ClaimedJob, ctx: Context, job_output: JobOutputReader | None
) -> RunResult:
    model = validated(spec, job)
    if isinstance(model, Unfit):
        return model
    try:
        part = None if spec.part is None else spec.part_of(model)
        if spec.output_model is not None and job_output is not None:
            try:
                stored = job_output(job.id)
            except (psycopg.Error, DatabaseUnavailable) as exc:
                if not unavailable(exc):
                    raise
                # Not the job's fault, and it has not started: give the claim up uncharged.
                return Lost(f"database unavailable before the run started: {exc}")
            if stored is not None:
                return Succeeded(spec.output_model.model_validate(stored), reused=True, part=part)
        if spec.is_async:
            timed = CpuOfSteps(spec.fn(model, ctx), ctx.usage_record)
            result = run_coroutine(timed.run(), ctx.lost_lease, f"job {job.id}")
        else:
            result = spec.fn(model, ctx)
        if spec.output_model is not None and result is not None:
            result = spec.output_model.model_validate(result)
            if spec.then is not None:
                # The output is the next stage's input; one that does not fit fails this job.
                ctx.enqueue(spec.then, result)
    except LeaseLost as exc:
        return Lost(str(exc))
    except Waiting as waiting:
        return WaitingForInput(waiting.request)
    except BaseException as exc:  # SystemExit from a stage must not stop the worker either
        record_error(exc)
        # A wait that timed out stays timed out: a retry would meet the same answer.
        permanent = isinstance(exc, WaitTimedOut) or spec.is_permanent(exc)
        return Raised(describe_error(exc), permanent=permanent)
    output = result if spec.output_model is not None else None
    if output is None and part is None and not ctx.has_steps:
        return NOTHING
    steps = ctx.transaction_steps
    return Succeeded(output, tuple(steps), part=part, code_version=spec.code_version)
