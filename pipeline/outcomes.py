"""What happened when a job ran (an Outcome), and what the database must record (a Transition).

`decide` is the one place where that mapping lives. It is pure: no database, no clock, no
worker state, so every case is a row in a table test. The completer applies the transition.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from pydantic import BaseModel

from pg_pipeline.redact import redact
from pg_pipeline.retry_delays import retry_delay
from pg_pipeline.stage import StageSpec
from pg_pipeline.store import ClaimedJob
from pg_pipeline.validation import find_unstorable
from pg_pipeline.waits import WaitRequest

MAX_ERROR_CHARS = 4000  #: last_error keeps the message and the innermost frames, not megabytes

TransactionStep = Callable[[psycopg.Connection[Any]], None]

# -- outcomes: what running the job produced ---------------------------------------------------


@dataclass(frozen=True)
class Succeeded:
    output: BaseModel | None
    steps: tuple[TransactionStep, ...] = ()  # follow-ups and on_complete, in order
    reused: bool = False  # this job stored its output on an earlier run; nothing ran again
    part: int | None = None  # the part the output is stored under, when the stage has parts
    code_version: str | None = None  # the stage's code version, stored with the output


@dataclass(frozen=True)
class Raised:
    message: str
    permanent: bool


@dataclass(frozen=True)
class TimedOut:
    after_s: float


@dataclass(frozen=True)
class Crashed:
    """The child process running the job alone died: the crash is the job's own."""

    how: str  # "killed by SIGKILL", "exited with status 3"


@dataclass(frozen=True)
class Lost:
    """This claim no longer owns the job (lease lost, cancelled, shut down)."""

    reason: str


@dataclass(frozen=True)
class NotRun:
    """The job must run alone in a child process, and none could be started (the fork server
    died or cannot fork): not the job's doing, and a thread must not run it instead."""

    reason: str


@dataclass(frozen=True)
class Unfit:
    """The payload does not fit this worker's input model of the stage, so the stage did not
    run. In a rolling deploy a worker running another version of the stage may accept it: then
    `left` says why the job is left to that worker (pipeline/worker/versions.py judges), and it
    goes back to the queue uncharged; without `left`, the job fails."""

    reason: str
    left: str | None = None


@dataclass(frozen=True)
class WaitingForInput:
    """The stage called ctx.wait_for on a wait no signal or deadline has resolved yet: the run
    ends here, to start again from the top once one does. Nothing else of it is written (its
    follow-ups and on_complete steps are dropped: the next run adds them again)."""

    request: WaitRequest


#: What a run produced, as the executor (or the parent of a child process) saw it.
RunResult = Succeeded | Raised | TimedOut | Crashed | Lost | NotRun | Unfit | WaitingForInput


@dataclass(frozen=True)
class LostWhileRunning:
    """The run ended, as `ran`, after this claim had lost its lease: the heartbeat found the
    job claimed again, it was cancelled, or the worker let it go at shutdown."""

    ran: RunResult


Outcome = RunResult | LostWhileRunning

# -- transitions: the one fenced write that settles the claim ---------------------------------


@dataclass(frozen=True)
class Complete:
    output: Any = None  # the output as JSON, stored with the completion; None for none
    part: int | None = None
    steps: tuple[TransactionStep, ...] = field(default=())
    code_version: str | None = None  #: what made the output (StageSpec.code_version)

    @property
    def plain(self) -> bool:
        """Nothing to write but the state: such completions are batched."""
        return self.output is None and not self.steps


#: The transition of nearly every job of a fast stage, shared rather than made per job.
PLAIN_COMPLETE = Complete()

#: Why a job is retried, failed or given back, as the settlement log line says it (not compared:
#: the transition is the same write whatever the cause).
Cause = str


@dataclass(frozen=True)
class Retry:
    delay_s: float
    error: str
    cause: Cause = field(default="raised", compare=False)


@dataclass(frozen=True)
class Fail:
    error: str
    cause: Cause = field(default="raised", compare=False)


@dataclass(frozen=True)
class GiveBack:
    """Back to the queue after delay_s with the attempt refunded: this worker could not run
    the job, through no fault of the job's, and may later (or another worker may)."""

    delay_s: float
    error: str
    cause: Cause = field(default="not run", compare=False)


@dataclass(frozen=True)
class Discard:
    """Write nothing: the claim is no longer ours, and whoever owns the job now decides."""

    reason: str


@dataclass(frozen=True)
class Wait:
    """To 'waiting': no lease, worker or slot, the attempt refunded (a resume must never fail
    a job for having waited), and the wait recorded, open, with its deadline."""

    request: WaitRequest


Transition = Complete | Retry | Fail | GiveBack | Discard | Wait

#: How soon a job that no child process could run is offered again (to any worker).
NOT_RUN_DELAY_S = 5.0
#: How soon a job left for a worker running another version of its stage is offered again: the
#: workers that cannot run it claim it at most this often meanwhile.
LEFT_DELAY_S = 10.0


def decide(
    spec: StageSpec, job: ClaimedJob, outcome: Outcome, rng: random.Random | None = None
) -> Transition:
    """The transition for an outcome. A failure retries while attempts remain and the error
    may pass; a permanent one, or one on the final attempt, fails the job for good."""
    if isinstance(outcome, LostWhileRunning):
        if not isinstance(outcome.ran, TimedOut | Crashed):
            return Discard("the claim was lost while running")
        # A timeout or a crash is the job's own doing: it is charged as usual, so a job that
        # hangs or kills its process cannot loop; the write is fenced, so if another claim owns
        # the job by now, it writes nothing all the same.
        outcome = outcome.ran
    if isinstance(outcome, Lost):
        return Discard(outcome.reason)
    if isinstance(outcome, NotRun):
        return GiveBack(NOT_RUN_DELAY_S, clean_error(outcome.reason))
    if isinstance(outcome, WaitingForInput):
        return Wait(outcome.request)
    if isinstance(outcome, Unfit):
        if outcome.left is not None:
            return GiveBack(LEFT_DELAY_S, clean_error(outcome.left), "left")
        return Fail(clean_error(outcome.reason), "unfit")
    if isinstance(outcome, Succeeded):
        if outcome.reused:
            return Complete()
        output = None if outcome.output is None else outcome.output.model_dump(mode="json")
        problem = None if output is None else find_unstorable(output)
        if problem is not None:
            # jsonb would refuse it inside the completing transaction; say why, and fail now.
            return Fail(clean_error(f"output cannot be stored: {problem}"), "unstorable")
        if output is None and not outcome.steps and outcome.part is None:
            return PLAIN_COMPLETE
        return Complete(output, outcome.part, outcome.steps, outcome.code_version)
    if isinstance(outcome, TimedOut):
        error, permanent, cause = f"timed out after {outcome.after_s:g} s", False, "timed out"
    elif isinstance(outcome, Crashed):
        error = f"crashed its worker process ({outcome.how}) while running in isolation"
        permanent, cause = False, "crashed"
    else:
        error, permanent, cause = outcome.message, outcome.permanent, "raised"
    error = clean_error(error)
    if permanent or job.attempts >= job.max_attempts:
        return Fail(error, cause)
    delay = retry_delay(job.attempts, base_s=spec.backoff_base_s, cap_s=spec.backoff_cap_s, rng=rng)
    return Retry(delay, error, cause)


def clean_error(text: str) -> str:
    """An error message the database will store and an operator may read: no NUL (text columns
    refuse it), no credentials, bounded in size."""
    return redact(text.replace("\x00", "\\x00"))[:MAX_ERROR_CHARS]
