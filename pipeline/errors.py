"""Exceptions a user of pg-pipeline sees, and the ones a stage raises to steer its job."""

from __future__ import annotations

from typing import Any


class PipelineError(Exception):
    """Base of every error pg-pipeline raises on its own."""


class DatabaseUnavailable(PipelineError):
    """The database could not be reached; the message names the host, never the password."""


class UnknownStage(PipelineError):
    """A stage name neither this process's code knows nor, when `recorded`, any worker
    recorded (pg_pipeline.recorded_stages)."""

    def __init__(self, name: str, known: list[str], *, recorded: bool = False) -> None:
        if recorded:
            hint = ", ".join(sorted(known)) or (
                "none: no worker has recorded its stages in this database, and no app is loaded"
            )
            where = " (imported here or recorded by workers)"
        else:
            hint = ", ".join(sorted(known)) or (
                "none: load your stages with --app MODULE or PIPELINE_APP"
            )
            where = ""
        super().__init__(f"unknown stage {name!r}; registered stages{where}: {hint}")
        self.name = name


class InvalidPayload(PipelineError):
    """A payload does not validate against its stage's input model. Nothing was enqueued."""


class PayloadTooLarge(InvalidPayload):
    """A payload's JSON is over the payload limit (PIPELINE_MAX_PAYLOAD_BYTES): large data goes
    to blob storage, the payload carrying its key. Nothing was enqueued."""


class PermanentError(Exception):
    """Raise from a stage when retrying cannot help (bad input): the job fails at once."""


class RetryableError(Exception):
    """Raise from a stage when a later attempt may succeed (an upstream timed out)."""


class LeaseLost(Exception):
    """The worker no longer owns the job: its attempt was reclaimed, cancelled or timed out."""


class SchemaMissing(PipelineError):
    """The database lacks pg-pipeline's tables or functions (never migrated, or behind the
    package): the message names what is missing and how to migrate, without the SQL."""


class Waiting(BaseException):
    """Raised by ctx.wait_for while its wait is unresolved: the run ends here, and the job waits
    (holding no worker, lease or slot) until a signal or the wait's deadline resumes it, when
    the stage runs again from the top. A BaseException, so that a stage's `except Exception`
    cannot swallow it; a stage must let it through (no bare `except:` around wait_for)."""

    def __init__(self, request: Any) -> None:
        super().__init__(f"waiting for {getattr(request, 'name', request)!r}")
        #: what to record (pg_pipeline.waits.WaitRequest)
        self.request = request


class WaitTimedOut(Exception):
    """Raised by ctx.wait_for when its wait's deadline passed with no signal. Uncaught, it fails
    the job for good (retrying cannot bring the signal back); a stage may catch it and go on
    with a default instead."""

    def __init__(self, message: str, *, name: str, timeout_s: float) -> None:
        super().__init__(message)
        self.name = name
        self.timeout_s = timeout_s


class InvalidWait(PermanentError, ValueError):
    """Raised by ctx.wait_for called wrongly (a model that is not a pydantic model class, a
    timeout out of range, a name, proposal or detail that cannot be stored): the stage's code
    is wrong, and every retry would call it the same way, so the job fails at once."""


class InvalidSignal(PipelineError, ValueError):
    """A signal's payload does not fit the schema of the model its wait asked for: the message
    lists each field's error. Nothing was changed."""


class NoWaitingStep(PipelineError, LookupError):
    """No wait to resume: no such run, nothing of it waits on that name, it was already
    signalled, timed out or cancelled, or the run finished. The message says which. Nothing
    was changed."""
