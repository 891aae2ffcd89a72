"""OpenTelemetry: the span that was current when a job was enqueued is the parent of the span
its run gets, in a drain as in a worker; a stage's follow-ups and its fan-out's next job carry
the run's span on, in a child process too; a run that raised ends with an error status and the
exception recorded. Spans go to the SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel

from pg_pipeline import Context, WorkerSettings
from pg_pipeline.enqueue import JobRequest, enqueue, enqueue_many
from pg_pipeline.stage import Registry, stage
from pg_pipeline.testing import drain
from pg_pipeline.tracing import JOB_ID, OUTCOME, RUN_ID, STAGE, TENANT
from tests.integration.workers import running_worker
from tests.support.apps import traced_app  # noqa: F401  its stages, which a child imports by name
from tests.support.waiting import wait_for

REG = Registry()


class Order(BaseModel):
    item: str


@stage("order", registry=REG)
def order(job: Order, ctx: Context) -> None:
    ctx.enqueue("ship", {"item": job.item})


@stage("ship", registry=REG, max_attempts=2)
def ship(job: Order, ctx: Context) -> None:
    if job.item == "anvil":
        raise ValueError("anvils do not ship")


class Pages(BaseModel):
    pages: int


class Page(BaseModel):
    page: int


@stage("split", registry=REG)
def split(job: Pages, ctx: Context) -> None:
    ctx.fan_out("page", [{"page": i} for i in range(job.pages)], then=("bind", {"pages": 0}))


@stage("page", registry=REG)
def page(job: Page, ctx: Context) -> None:
    pass


@stage("bind", registry=REG)
def bind(job: Pages, ctx: Context) -> None:
    pass


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """An SDK tracer provider as the global one, for this test alone: OpenTelemetry lets the
    global be set once per process, so the test puts it in place and takes it away as the
    SDK's own tests do, and the other tests of the session run untraced."""
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exported))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    yield exported
    provider.shutdown()


def runs(exported: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    """The job runs' spans by stage (one run per stage in these tests)."""
    spans = [s for s in exported.get_finished_spans() if s.name.startswith("process ")]
    by_stage = {str(s.attributes[STAGE]): s for s in spans if s.attributes is not None}
    assert len(by_stage) == len(spans), f"a stage ran twice: {[s.name for s in spans]}"
    return by_stage


def parent_of(span: ReadableSpan) -> tuple[int, int] | None:
    return None if span.parent is None else (span.parent.trace_id, span.parent.span_id)


def ids_of(span: ReadableSpan) -> tuple[int, int]:
    assert span.context is not None
    return span.context.trace_id, span.context.span_id


def traceparent(conn: psycopg.Connection[Any], job_id: int) -> str | None:
    row = conn.execute("SELECT traceparent FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None
    return row[0]  # type: ignore[no-any-return]


def test_a_job_runs_in_a_child_span_of_the_span_that_enqueued_it_and_its_follow_up_of_its_run(
    db_url: str, conn: psycopg.Connection[Any], exporter: InMemorySpanExporter
) -> None:
    tracer = trace.get_tracer(__name__)
    with tracer.start_as_current_span("checkout") as checkout, conn.transaction():
        run_id = enqueue(conn, "order", {"item": "kettle"}, tenant_id="acme", registry=REG)
    context = checkout.get_span_context()
    flags = f"{context.trace_flags:02x}"
    stored = f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags}"
    assert traceparent(conn, run_id) == stored and context.trace_flags.sampled

    drained = drain(db_url, registry=REG, run_id=run_id)
    assert drained.ok and len(drained.done) == 2

    spans = runs(exporter)
    first, follow_up = spans["order"], spans["ship"]
    assert parent_of(first) == (context.trace_id, context.span_id)
    assert parent_of(follow_up) == ids_of(first), "the follow-up's run is not under its parent's"
    assert first.kind == SpanKind.CONSUMER and first.name == "process order"
    assert first.attributes is not None and follow_up.attributes is not None
    assert first.attributes[JOB_ID] == run_id and first.attributes[RUN_ID] == run_id
    assert first.attributes[TENANT] == "acme" and first.attributes[OUTCOME] == "completed"
    assert follow_up.attributes[RUN_ID] == run_id and follow_up.attributes[JOB_ID] != run_id
    assert first.status.status_code == StatusCode.UNSET


def test_a_run_that_raised_ends_in_error_with_its_exception_and_its_outcome(
    db_url: str, conn: psycopg.Connection[Any], exporter: InMemorySpanExporter
) -> None:
    job_id = enqueue(conn, "ship", {"item": "anvil"}, registry=REG)
    assert traceparent(conn, job_id) is None  # no span was current

    drained = drain(db_url, registry=REG, run_id=job_id)
    assert list(drained.failed) == [job_id]

    spans = [s for s in exporter.get_finished_spans() if s.name == "process ship"]
    assert [s.attributes[OUTCOME] for s in spans if s.attributes] == ["retried", "failed"]
    for span in spans:
        assert span.parent is None, "a job enqueued outside any span starts a trace of its own"
        assert span.status.status_code == StatusCode.ERROR
        assert span.status.description == "ValueError: anvils do not ship"
        [event] = span.events
        assert event.name == "exception" and event.attributes is not None
        assert event.attributes["exception.type"] == "ValueError"
        assert "raise ValueError" in str(event.attributes["exception.stacktrace"])
    assert ids_of(spans[0])[0] != ids_of(spans[1])[0], "each run of an untraced job is a root"


def test_a_bulk_enqueue_and_a_fan_outs_next_job_carry_the_span_they_were_enqueued_in(
    db_url: str, conn: psycopg.Connection[Any], exporter: InMemorySpanExporter
) -> None:
    tracer = trace.get_tracer(__name__)
    with tracer.start_as_current_span("import"):
        [split_id] = enqueue_many(conn, [JobRequest("split", {"pages": 2})], registry=REG)
    drained = drain(db_url, registry=REG, run_id=split_id)
    assert drained.ok and len(drained.done) == 4

    by_name: dict[str, list[ReadableSpan]] = {}
    for span in exporter.get_finished_spans():
        by_name.setdefault(span.name, []).append(span)
    [imported], [split_run], [bind_run] = (
        by_name["import"],
        by_name["process split"],
        by_name["process bind"],
    )
    assert parent_of(split_run) == ids_of(imported)
    assert [parent_of(s) for s in by_name["process page"]] == [ids_of(split_run)] * 2
    # Enqueued by the database when the last page finished, from the row the split kept.
    assert parent_of(bind_run) == ids_of(split_run)


def test_a_worker_runs_each_job_in_the_span_of_its_enqueuer(
    db_url: str, conn: psycopg.Connection[Any], exporter: InMemorySpanExporter
) -> None:
    tracer = trace.get_tracer(__name__)
    with tracer.start_as_current_span("checkout") as checkout:
        run_id = enqueue(conn, "order", {"item": "teapot"}, registry=REG)
    settings = WorkerSettings(concurrency=2, poll_interval_s=0.1, reclaim_interval_s=0.5)
    with running_worker(db_url, ["order", "ship"], settings, registry=REG):
        spans = wait_for(
            lambda: (found := runs(exporter)).keys() == {"order", "ship"} and found,
            what="both runs' spans",
        )
    context = checkout.get_span_context()
    assert parent_of(spans["order"]) == (context.trace_id, context.span_id)
    assert parent_of(spans["ship"]) == ids_of(spans["order"])
    assert spans["ship"].attributes is not None
    assert spans["ship"].attributes[RUN_ID] == run_id
    assert spans["ship"].attributes[OUTCOME] == "completed"


def test_a_job_run_alone_in_a_child_process_enqueues_under_its_runs_span(
    db_url: str, conn: psycopg.Connection[Any], exporter: InMemorySpanExporter
) -> None:
    tracer = trace.get_tracer(__name__)
    with tracer.start_as_current_span("upload") as upload:
        enqueue(conn, "traced_alone", {})
    settings = WorkerSettings(concurrency=2, poll_interval_s=0.1, reclaim_interval_s=0.5)
    with running_worker(db_url, ["traced_alone", "traced_after"], settings):
        spans = wait_for(
            lambda: (found := runs(exporter)).keys() == {"traced_alone", "traced_after"} and found,
            timeout=60,
            what="both runs' spans",
        )
    context = upload.get_span_context()
    assert parent_of(spans["traced_alone"]) == (context.trace_id, context.span_id)
    assert parent_of(spans["traced_after"]) == ids_of(spans["traced_alone"])
    assert spans["traced_alone"].attributes is not None
    assert spans["traced_alone"].attributes[OUTCOME] == "completed"
