"""pipeline/tracing.py without a database: OpenTelemetry costs nothing until a process sets it
up, and an isolated job's child process enqueues under the span its worker passed it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from pg_pipeline.store import ClaimedJob
from pg_pipeline.tracing import carried, current_traceparent, under

REMOTE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def run_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_without_opentelemetry_loaded_a_worker_and_an_enqueue_import_none_of_it() -> None:
    out = run_python(
        """
        import sys
        from pydantic import BaseModel
        import pg_pipeline.cli, pg_pipeline.testing, pg_pipeline.worker.worker
        from pg_pipeline.enqueue import JobRequest, job_row
        from pg_pipeline.stage import Registry, stage
        from pg_pipeline.tracing import job_tracer

        class Item(BaseModel):
            n: int

        reg = Registry()

        @stage("count", registry=reg)
        def count(job: Item, ctx: object) -> None:
            pass

        row = job_row(JobRequest("count", {"n": 1}), reg)
        loaded = [m for m in sys.modules if m.startswith("opentelemetry")]
        print(row["traceparent"], job_tracer(), loaded)
        """
    )
    assert out == "None None []"


def test_opentelemetry_loaded_without_a_tracer_provider_leaves_the_worker_untraced() -> None:
    out = run_python(
        """
        import opentelemetry.trace
        from pg_pipeline.tracing import current_traceparent, job_tracer
        tracer = opentelemetry.trace.get_tracer("app")
        with tracer.start_as_current_span("request"):
            print(job_tracer(), current_traceparent())
        """
    )
    assert out == "None None", "a span nobody records was stored, or a worker traced for no one"


def test_a_child_process_enqueues_under_the_traceparent_it_was_handed() -> None:
    assert current_traceparent() is None
    with under(REMOTE):
        assert current_traceparent() == REMOTE
    assert current_traceparent() is None
    with under(None):
        assert current_traceparent() is None


def test_an_isolated_job_is_handed_its_runs_span_in_place_of_its_enqueuers() -> None:
    job = ClaimedJob(7, "resize", None, {}, 0, 1, 5, 60, None, 7, traceparent=REMOTE)
    provider = TracerProvider()
    with provider.get_tracer(__name__).start_as_current_span("process resize") as span:
        handed = carried(job)
    ids = span.get_span_context()
    assert handed.traceparent == f"00-{ids.trace_id:032x}-{ids.span_id:016x}-{ids.trace_flags:02x}"
    assert handed._replace(traceparent=REMOTE) == job
    assert carried(job).traceparent is None, "outside a run's span there is nothing to hand on"
    assert trace.get_current_span() is trace.INVALID_SPAN
