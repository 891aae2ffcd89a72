"""Optional OpenTelemetry tracing: a span per job run, in the trace of whoever enqueued the job.

* **At enqueue** (`job_row`, so every way in: enqueue, enqueue_many, a stage's follow-ups and
  fan-outs): when a span is current, its W3C traceparent is stored in the job's `traceparent`
  column, in the caller's transaction like the rest of the row.
* **In the worker** (and in `pg_pipeline.testing.drain`): each run of a job is a span, "process
  <stage>", a child of the stored traceparent (a root when there is none), current while the
  stage runs. So the stage's own spans (an HTTP client's, a database driver's) nest under it,
  and the follow-up jobs it enqueues carry its context on to the next stage. The span has the
  job's stage, id, attempt, tenant and run, and how the run ended (`pg_pipeline.outcome`,
  the `result` of pipeline_job_duration_seconds); a run that raised records the exception
  and ends with an error status. An isolated job's span is the worker's; the child process
  enqueues follow-ups under it.

Off, and free, unless the process has set OpenTelemetry up: nothing here imports it. The
enqueue side looks for a current span only once something else loaded `opentelemetry.trace`;
a worker traces when, at its start, a tracer provider has been set (`trace.set_tracer_provider`
in the application's module, or `opentelemetry-instrument pipeline worker ...`). The package's
`[otel]` extra installs the API and the SDK.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

    from pg_pipeline.store import ClaimedJob

log = logging.getLogger(__name__)

#: The module whose presence says the process uses OpenTelemetry at all.
_TRACE_MODULE = "opentelemetry.trace"

#: The span's attributes: the job's (as the log lines name them, pipeline/logs.py) and the
#: run's result. Under the distribution's name, as OpenTelemetry asks of a library's own.
STAGE = "pg_pipeline.stage"
JOB_ID = "pg_pipeline.job.id"
ATTEMPT = "pg_pipeline.job.attempt"
TENANT = "pg_pipeline.tenant"
RUN_ID = "pg_pipeline.run.id"
OUTCOME = "pg_pipeline.outcome"
#: The messaging conventions' names for what a consumer span is about.
SYSTEM = "pg-pipeline"


def current_traceparent() -> str | None:
    """The W3C traceparent of the span current now (to store with a job enqueued now), or None
    when there is none or OpenTelemetry is not loaded (then this is a dictionary lookup)."""
    if _TRACE_MODULE not in sys.modules:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


def job_tracer() -> JobTracer | None:
    """A JobTracer when this process has set up OpenTelemetry tracing, else None (and the
    worker runs jobs exactly as without it)."""
    if _TRACE_MODULE not in sys.modules:
        return None
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):
        return None  # nobody set a provider: every span would be a no-op
    # Said once per worker: whether its runs are traced is otherwise visible only elsewhere.
    log.info("tracing: each job run is an OpenTelemetry span (%s)", type(provider).__name__)
    return JobTracer(provider.get_tracer(__name__))


def record_error(exc: BaseException) -> None:
    """A stage raised `exc`: record it on the job's span, when one is current and recording.
    With the exception itself, traceback and all, which the run's result only describes."""
    if _TRACE_MODULE not in sys.modules:
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        span.record_exception(exc)


def carried(job: ClaimedJob) -> ClaimedJob:
    """`job` with the current span (its run's, when the worker traces) as its traceparent, for
    a child process to run it `under`; with None when nothing traces here."""
    return job._replace(traceparent=current_traceparent())


@contextmanager
def under(traceparent: str | None) -> Iterator[None]:
    """Within this block, `traceparent` is the current span's context: an isolated job's child
    process enqueues its follow-ups under the span its worker runs the job in. Nothing is
    imported without a traceparent, which a worker that does not trace never passes."""
    if traceparent is None:
        yield
        return
    from opentelemetry import context

    token = context.attach(_parent(traceparent))
    try:
        yield
    finally:
        context.detach(token)


class JobTracer:
    """Starts the span of each run of a job."""

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer

    @contextmanager
    def run(self, job: ClaimedJob) -> Iterator[JobSpan]:
        """The span of one run of `job`, current within the block."""
        from opentelemetry import trace

        attributes: dict[str, str | int] = {
            STAGE: job.type,
            JOB_ID: job.id,
            ATTEMPT: job.attempts,
            RUN_ID: job.root_id,
            "messaging.system": SYSTEM,
            "messaging.operation.type": "process",
            "messaging.destination.name": job.type,
            "messaging.message.id": str(job.id),
        }
        if job.tenant_id is not None:
            attributes[TENANT] = job.tenant_id
        span = self._tracer.start_span(
            f"process {job.type}",
            # The enqueuer's span, or none: never whatever happens to be current in the
            # worker's thread (a test's own span around a drain, say).
            context=_parent(job.traceparent),
            kind=trace.SpanKind.CONSUMER,
            attributes=attributes,
        )
        with trace.use_span(span, end_on_exit=True):
            yield JobSpan(span)


class JobSpan:
    """One run's span, told how the run ended."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def ended(self, result: str, error: str | None = None) -> None:
        """The run ended as `result` (pipeline/worker/job_executor.py RUN_RESULTS), failing
        with `error` if it did."""
        self.span.set_attribute(OUTCOME, result)
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            # The first line says what was raised; record_error kept the traceback.
            self.span.set_status(Status(StatusCode.ERROR, error.partition("\n")[0]))


def _parent(traceparent: str | None) -> Context:
    """The context whose current span is the one `traceparent` names (an empty one without it,
    or when it is malformed: the job's span is then a root)."""
    from opentelemetry.context import Context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    if traceparent is None:
        return Context()
    return TraceContextTextMapPropagator().extract({"traceparent": traceparent}, Context())
