"""Workers record their stages; a producer without the stages' code enqueues by name, its
payload checked against the JSON schema of a version live workers run."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from pydantic import BaseModel

import pg_pipeline
from pg_pipeline import (
    Context,
    InvalidPayload,
    JobRequest,
    Registry,
    UnknownStage,
    WorkerSettings,
    enqueue,
    enqueue_many,
    stage,
)
from pg_pipeline.recorded_stages import record_stages, recorded_stages
from tests.integration.workers import running_worker
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
FAST = WorkerSettings(concurrency=2, poll_interval_s=0.1, reclaim_interval_s=0.5, grace_period_s=2)
#: What a producer that imports none of the stages' code has.
NO_CODE = Registry()


class Doc(BaseModel):
    pages: int


class Label(BaseModel):
    label: str


class DocInLanguage(BaseModel):  # the next version of Doc: a field it requires is added
    pages: int
    language: str


WORKER_CODE = Registry()


@stage("classify", then="file", lease=40, max_attempts=7, priority=3, registry=WORKER_CODE)
def classify(job: Doc, ctx: Context) -> Label:
    return Label(label=f"{job.pages} pages")


@stage("file", tenant_cap=2, registry=WORKER_CODE)
def file(job: Label, ctx: Context) -> None:
    return None


NEXT_CODE = Registry()


@stage("classify", registry=NEXT_CODE)
def classify_next(job: DocInLanguage, ctx: Context) -> None:
    return None


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        yield c


def record(conn: Conn, code: Registry, *, live: bool) -> uuid.UUID:
    """What a worker running `code` records when it starts; `live`: its liveness row too."""
    worker_id = uuid.uuid4()
    record_stages(conn, code.select(None), worker_id, "host-1")
    if live:
        versions = psycopg.types.json.Jsonb({s.name: s.version for s in code.select(None)})
        conn.execute(
            "INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency, stage_versions)"
            " VALUES (%s, 'host-1', 1, %s, 1, %s)",
            (worker_id, code.names(), versions),
        )
    return worker_id


def job(conn: Conn, job_id: int) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT type, payload, max_attempts, lease_seconds, priority, status FROM pipeline.jobs"
        " WHERE id = %s",
        (job_id,),
    ).fetchone()
    assert row is not None
    return tuple(row)


def count_jobs(conn: Conn) -> int:
    row = conn.execute("SELECT count(*) FROM pipeline.jobs").fetchone()
    assert row is not None
    return int(row[0])


def test_a_worker_records_its_stages_and_runs_a_job_enqueued_by_name(
    db_url: str, conn: Conn
) -> None:
    with running_worker(db_url, ["classify", "file"], FAST, registry=WORKER_CODE) as worker:
        found = wait_for(lambda: recorded_stages(conn), what="the worker's stages recorded")
        spec = WORKER_CODE.get("classify")
        classify_row, file_row = found
        assert (classify_row.name, classify_row.version, classify_row.then) == (
            "classify",
            spec.version,
            "file",
        )
        assert classify_row.input_schema == spec.input_schema
        assert classify_row.output_schema == Label.model_json_schema(mode="serialization")
        assert (classify_row.max_attempts, classify_row.lease_s, classify_row.priority) == (
            7,
            40,
            3,
        )
        assert classify_row.recorded_by == worker.id and classify_row.live
        assert (file_row.name, file_row.tenant_cap, file_row.output_schema) == ("file", 2, None)

        job_id = enqueue(conn, "classify", {"pages": 3}, registry=NO_CODE)
        assert job(conn, job_id)[:5] == ("classify", {"pages": 3}, 7, 40, 3)
        wait_for(
            lambda: (
                conn.execute(
                    "SELECT count(*) FROM pipeline.jobs WHERE type = 'file' AND status = 'done'"
                ).fetchone()
                == (1,)
            ),
            what="the job enqueued by name and its follow-up done",
        )
    # A worker that stopped is no longer live; what it recorded stays.
    assert [s.live for s in recorded_stages(conn, ["classify"])] == [False]


def test_a_payload_enqueued_by_name_is_checked_against_the_recorded_schema(conn: Conn) -> None:
    record(conn, WORKER_CODE, live=False)

    with pytest.raises(InvalidPayload) as raised:
        enqueue(conn, "classify", {"pages": "three"}, registry=NO_CODE)
    assert str(raised.value) == (
        "invalid payload for stage 'classify', as workers recorded it: "
        "field 'pages': 'three' is not of type 'integer'"
    )
    with pytest.raises(InvalidPayload, match="payload: 'pages' is a required property"):
        enqueue(conn, "classify", {}, registry=NO_CODE)
    with pytest.raises(UnknownStage) as unknown:
        enqueue(conn, "clasify", {"pages": 1}, registry=NO_CODE)
    assert str(unknown.value) == (
        "unknown stage 'clasify'; registered stages (imported here or recorded by workers): "
        "classify, file"
    )
    assert count_jobs(conn) == 0

    # Unvalidated: stored as given (the claim validates it), defaults as recorded.
    loose = enqueue(conn, "classify", {"pages": "three"}, registry=NO_CODE, validate=False)
    assert job(conn, loose)[:5] == ("classify", {"pages": "three"}, 7, 40, 3)
    # ... and a stage no worker recorded yet takes the library's defaults.
    early = enqueue(conn, "archive", {"any": 1}, registry=NO_CODE, validate=False)
    assert job(conn, early)[:5] == ("archive", {"any": 1}, 5, 300, 0)


def test_enqueue_many_checks_stages_from_code_and_by_name_before_inserting_any(
    conn: Conn,
) -> None:
    record(conn, WORKER_CODE, live=False)
    mixed = [
        JobRequest("noop", {}),  # in this process's code (jobs_app)
        JobRequest("classify", {"pages": 2}),
        JobRequest("file", {"label": "a"}),
    ]
    import tests.support.apps.jobs_app  # noqa: F401  registers "noop" in pg_pipeline.REGISTRY

    with pytest.raises(InvalidPayload, match="field 'label': 7 is not of type 'string'"):
        enqueue_many(conn, [*mixed, JobRequest("file", {"label": 7})])
    assert count_jobs(conn) == 0
    ids = enqueue_many(conn, mixed)
    assert [job(conn, i)[0] for i in ids] == ["noop", "classify", "file"]


def test_a_payload_must_suit_a_version_that_live_workers_run(conn: Conn) -> None:
    # An old worker recorded Doc, then stopped; the new version requires `language`.
    old = record(conn, WORKER_CODE, live=True)
    record(conn, NEXT_CODE, live=True)
    versions = {s.version: s.live for s in recorded_stages(conn, ["classify"])}
    assert versions == {
        WORKER_CODE.get("classify").version: True,
        NEXT_CODE.get("classify").version: True,
    }

    # Both live: either version's payload goes.
    enqueue(conn, "classify", {"pages": 1}, registry=NO_CODE)
    enqueue(conn, "classify", {"pages": 1, "language": "de"}, registry=NO_CODE)

    conn.execute("DELETE FROM pipeline.workers WHERE id = %s", (old,))
    with pytest.raises(InvalidPayload, match="'language' is a required property"):
        enqueue(conn, "classify", {"pages": 1}, registry=NO_CODE)
    enqueue(conn, "classify", {"pages": 1, "language": "de"}, registry=NO_CODE)

    # No worker live (a deploy under way): the version recorded last decides.
    conn.execute("DELETE FROM pipeline.workers")
    conn.execute(
        "UPDATE pipeline.stages SET updated_at = now() - interval '1 hour' WHERE version = %s",
        (WORKER_CODE.get("classify").version,),
    )
    with pytest.raises(InvalidPayload, match="'language' is a required property"):
        enqueue(conn, "classify", {"pages": 1}, registry=NO_CODE)
    record(conn, WORKER_CODE, live=False)  # the old version's worker starts again, and stops
    enqueue(conn, "classify", {"pages": 1}, registry=NO_CODE)


def test_the_async_api_enqueues_by_name_in_the_callers_transaction(db_url: str, conn: Conn) -> None:
    record(conn, WORKER_CODE, live=False)

    async def main() -> int:
        async with await psycopg.AsyncConnection.connect(db_url) as aconn:
            with pytest.raises(InvalidPayload, match="is not of type 'integer'"):
                await pg_pipeline.aenqueue(aconn, "classify", {"pages": "x"}, registry=NO_CODE)
            async with aconn.transaction():
                kept = await pg_pipeline.aenqueue(aconn, "classify", {"pages": 4}, registry=NO_CODE)
            with pytest.raises(RuntimeError):
                async with aconn.transaction():
                    await pg_pipeline.aenqueue(aconn, "classify", {"pages": 5}, registry=NO_CODE)
                    raise RuntimeError("rolled back")
            return kept

    kept = asyncio.run(main())
    assert count_jobs(conn) == 1
    assert job(conn, kept)[:2] == ("classify", {"pages": 4})
