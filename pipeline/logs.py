"""Logs an operator can use: one line per job that did not simply complete, and the job's
fields on every line a stage logs while it runs.

* **The settlement line.** The completer publishes every settled claim here
  (`log_settlement`): a retry or a loss at WARNING, a job failed for good or one that crashed
  its process at ERROR, a plain completion at DEBUG. The line names the stage, the job, its
  tenant, the attempt, the reason and, for a retry, about when it runs next (the worker's clock
  plus the backoff; the database's clock decides).
* **The job's fields on the stage's own lines.** The worker sets `current job` (a contextvar)
  around each run, in the runner thread and in the child process of an isolated job, and
  `JobFilter` copies it onto each record as `job_id`, `stage`, `tenant` and `attempt` (None
  outside a job). A thread a stage starts itself inherits no contextvar: it may run its work in
  `contextvars.copy_context().run(...)` to keep the fields.
* **The job's lines, kept with its attempt**: pipeline/attempt_logs.py.
* **Two formats**: text for terminals, JSON (one object per line, the job's fields as keys)
  for log collectors: `pipeline worker --log-format json` or PIPELINE_LOG_FORMAT=json.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import IO, Any, NamedTuple

from pg_pipeline import attempt_logs
from pg_pipeline.outcomes import Discard, Fail, GiveBack, Retry, Transition, Wait
from pg_pipeline.store import ClaimedJob
from pg_pipeline.terminal import TerminalFormatter

LOG_FORMATS = ("text", "json")
LOG_FORMAT_ENV = "PIPELINE_LOG_FORMAT"
#: what every record carries once JobFilter has seen it (None outside a job)
JOB_FIELDS = ("job_id", "stage", "tenant", "attempt")
#: what a settlement line adds to the job's fields
SETTLEMENT_FIELDS = ("event", "cause", "max_attempts", "reason", "next_run_at")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: the logger of the settlement lines, so an operator can route or silence them alone
settlements = logging.getLogger("pg_pipeline.jobs")


class JobFields(NamedTuple):
    job_id: int
    stage: str
    tenant: str | None
    attempt: int

    @classmethod
    def of(cls, job: ClaimedJob) -> JobFields:
        return cls(job.id, job.type, job.tenant_id, job.attempts)


def running(job: ClaimedJob) -> attempt_logs.collecting:
    """Within this block (and what it calls, in this thread), log records carry the job, and
    are kept for the attempt (pipeline/attempt_logs.py). The job is read from the attempt's
    buffer, one context variable for both: its fields are read only when a line is logged,
    which most runs never do."""
    return attempt_logs.collecting(job.fence, job)


def current_job() -> JobFields | None:
    job: ClaimedJob | None = attempt_logs.current_job()
    return None if job is None else JobFields.of(job)


class JobFilter(logging.Filter):
    """Puts the running job's fields on a record (what a caller passed as `extra` stays)."""

    def filter(self, record: logging.LogRecord) -> bool:
        job = current_job()
        for name in JOB_FIELDS:
            if not hasattr(record, name):
                setattr(record, name, None if job is None else getattr(job, name))
        return True


class TextFormatter(TerminalFormatter):
    """The terminal's format; a stage's line within a job ends with the job's fields."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        job_id = getattr(record, "job_id", None)
        if job_id is None or hasattr(record, "event"):  # a settlement line names them itself
            return text
        tenant = getattr(record, "tenant", None)
        return (
            f"{text} [job {job_id} {getattr(record, 'stage', None)} "
            f"tenant {tenant or '-'} attempt {getattr(record, 'attempt', None)}]"
        )


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the job's fields while in a job,
    a settlement's fields, and the traceback as `exception`."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if getattr(record, "job_id", None) is not None:
            line.update({name: getattr(record, name, None) for name in JOB_FIELDS})
        for name in SETTLEMENT_FIELDS:
            if getattr(record, name, None) is not None:
                line[name] = getattr(record, name)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        # JSON escapes newlines and control characters: a multi-line error stays one line.
        return json.dumps(line, default=str)


@dataclass(frozen=True)
class LogSetup:
    """How a worker process logs; handed to the child process of an isolated job, whose
    logging starts unconfigured, so that its lines look like the worker's."""

    format: str = "text"
    level: int | str = logging.INFO


_setup: LogSetup | None = None


def configure(setup: LogSetup, stream: IO[str] | None = None) -> None:
    """The root logger writes to `stream` (stderr) in the format, with the job's fields."""
    global _setup
    if setup.format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {setup.format!r}; expected one of {LOG_FORMATS}")
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(JsonFormatter() if setup.format == "json" else TextFormatter())
    handler.addFilter(JobFilter())
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(setup.level)
    attempt_logs.install()
    _setup = setup


def current_setup() -> LogSetup | None:
    """What `configure` last set in this process; None if it was never called."""
    return _setup


def install_filter() -> None:
    """Give the root logger's handlers a JobFilter, once (a worker calls this on start, so an
    application that configured logging itself gets the job's fields too), and the handler
    that keeps a job's lines for its attempt."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, JobFilter) for f in handler.filters):
            handler.addFilter(JobFilter())
    attempt_logs.install()


# -- the settlement line ------------------------------------------------------------------------

_CAUSES = {
    "raised": "after an error",
    "timed out": "after a timeout",
    "crashed": "after crashing its process",
    "unfit": "as its payload does not fit the stage",
    "unstorable": "as its output cannot be stored",
    "refused": "as the database refused its result",
    "not run": "as no child process could run it",
    "left": "for a worker running another version of its stage",
}


def log_settlement(
    job: ClaimedJob, settled: str, transition: Transition | None, now: datetime | None = None
) -> None:
    """The one line for a settled claim. `settled` is the completer's word for what the database
    confirmed ("done", "queued", "failed", "lost", "unknown"); `transition` what was written,
    when the caller knows it."""
    event, level, reason, next_run = _describe(settled, transition, now)
    if not settlements.isEnabledFor(level):
        return
    cause = getattr(transition, "cause", None) if settled in ("queued", "failed") else None
    if cause == "crashed":
        level = logging.ERROR  # a job that kills its process is an operator's business at once
    fields: dict[str, Any] = {
        "job_id": job.id,
        "stage": job.type,
        "tenant": job.tenant_id,
        "attempt": job.attempts,
        "max_attempts": job.max_attempts,
        "event": event,
        "cause": cause,
        "reason": reason,
        "next_run_at": None if next_run is None else next_run.isoformat(timespec="seconds"),
    }
    why = "" if cause is None else f" {_CAUSES.get(cause, cause)}"
    head = f"{reason.splitlines()[0]}" if reason else ""
    after = "" if next_run is None else f"; next run about {fields['next_run_at']}"
    settlements.log(
        level,
        "job %s (%s, tenant %s, attempt %d/%d) %s%s%s%s",
        job.id,
        job.type,
        job.tenant_id or "-",
        job.attempts,
        job.max_attempts,
        event.replace("_", " "),
        why,
        f": {head}" if head else "",
        after,
        extra=fields,
    )


def log_settlements(jobs: Iterable[ClaimedJob], settled: str) -> None:
    """log_settlement for claims that settled alike, their transitions not known (a batch of
    acknowledgements): whether the line is logged at all is asked once, not per job."""
    if settlements.isEnabledFor(_describe(settled, None, None)[1]):
        for job in jobs:
            log_settlement(job, settled, None)


def _describe(
    settled: str, transition: Transition | None, now: datetime | None
) -> tuple[str, int, str | None, datetime | None]:
    """(event, level, reason, next run) of a settlement."""
    if settled == "done":
        return "done", logging.DEBUG, None, None
    if settled == "lost":
        reason = transition.reason if isinstance(transition, Discard) else None
        # Unknown why (a batch's acknowledgement): the fence fails alike for a job cancelled,
        # retried or reclaimed since, and "another claim owns it" was wrong for a cancel.
        why = reason or "the job is no longer this claim's (cancelled, or reclaimed)"
        return "lost", logging.WARNING, why, None
    if settled == "waiting":
        name = transition.request.name if isinstance(transition, Wait) else None
        return "waiting", logging.INFO, None if name is None else f"waits for {name!r}", None
    if settled == "unknown":
        reason = "the database stayed unreachable until the lease ran out; reclaim decides"
        return "unknown", logging.WARNING, reason, None
    if settled == "queued":
        if isinstance(transition, Retry | GiveBack):
            at = (now or datetime.now(UTC)) + timedelta(seconds=transition.delay_s)
            given_back = isinstance(transition, GiveBack)
            level = logging.INFO if given_back else logging.WARNING
            return ("given_back" if given_back else "retried"), level, transition.error, at
        return "retried", logging.WARNING, None, None
    reason = transition.error if isinstance(transition, Fail | Retry) else None
    return "failed", logging.ERROR, reason, None
