"""The named queries where they run: against an installation in a schema other than `pipeline`,
and under an application's search_path that names tables and functions like ours."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import enqueue
from pg_pipeline.admin.status import read_stages
from pg_pipeline.db import connect, make_pool
from pg_pipeline.migrate import migrate
from pg_pipeline.store import JobStore
from tests.support.slots import held_slots

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=7)


@contextmanager
def store(url: str, schema: str | None = None) -> Iterator[JobStore]:
    pool = make_pool(url, max_size=2, schema=schema)
    try:
        yield JobStore(pool)
    finally:
        pool.close()


def run_one_job(url: str, schema: str | None = None) -> int:
    """Enqueue, claim and complete a job as a worker does; its id."""
    with connect(url, schema=schema) as conn:
        job_id = enqueue(conn, "noop", {})
    with store(url, schema) as jobs:
        claimed = jobs.claim(["noop"], 10, WORKER)
        assert [job.id for job in claimed] == [job_id]
        assert jobs.complete([claimed[0].fence]) == {job_id}
    return job_id


def statuses(conn: Conn, table: str) -> list[tuple[Any, ...]]:
    return conn.execute(f"SELECT id, status FROM {table} ORDER BY id").fetchall()  # type: ignore[arg-type]


def test_an_installation_in_another_schema_runs_jobs_apart_from_the_default_one(
    db_url: str,
) -> None:
    with connect(db_url, schema="queue_b") as conn:
        assert migrate(conn)  # beside the template's `pipeline`, which it leaves alone

    job_id = run_one_job(db_url, "queue_b")

    with psycopg.connect(db_url, autocommit=True) as plain:
        assert statuses(plain, "queue_b.jobs") == [(job_id, "done")]
        assert statuses(plain, "pipeline.jobs") == []
    with connect(db_url, schema="queue_b") as conn:
        noop = [s for s in read_stages(conn) if s.stage == "noop"]
        assert [(s.completed_1h, s.queued, s.running) for s in noop] == [(1, 0, 0)]
    with connect(db_url) as conn:
        assert [s for s in read_stages(conn) if s.stage == "noop"] == []


def test_each_installation_wakes_only_its_own_workers(db_url: str) -> None:
    with connect(db_url, schema="queue_b") as conn:
        migrate(conn)
    with (
        connect(db_url, schema="queue_b") as listener_b,
        connect(db_url) as listener_a,
        connect(db_url, schema="queue_b") as producer,
    ):
        listener_b.execute("LISTEN queue_b_jobs")
        listener_a.execute("LISTEN pipeline_jobs")
        enqueue(producer, "noop", {})
        heard = [(n.channel, n.payload) for n in listener_b.notifies(timeout=5, stop_after=1)]
        assert heard == [("queue_b_jobs", "noop")]
        assert list(listener_a.notifies(timeout=0.5)) == []


def test_a_connection_for_another_schema_leaves_other_sql_as_it_is(db_url: str) -> None:
    with connect(db_url, schema="queue_b") as conn:
        assert conn.execute("SELECT 'pipeline.jobs'::text").fetchone() == ("pipeline.jobs",)


def test_an_invalid_schema_name_is_refused_before_connecting(db_url: str) -> None:
    with pytest.raises(ValueError, match="lower-case letters"):
        connect(db_url, schema='x"; DROP TABLE pipeline.jobs; --')


HOSTILE = """
CREATE SCHEMA evil;
-- Tables by our names, old and new, and functions by our functions' names, that fail loudly.
CREATE TABLE evil.jobs (id bigint, type text, status text);
CREATE TABLE evil.outputs (job_id bigint);
CREATE TABLE evil.tenant_slots (tenant_id text, stage text, running integer);
CREATE TABLE evil.job_outputs (job_id bigint);
CREATE TABLE evil.pipeline_workers (id uuid);
CREATE FUNCTION evil.claim(text[], integer, uuid, text[], integer[]) RETURNS SETOF evil.jobs
    LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'evil.claim ran'; END $$;
CREATE FUNCTION evil.pipeline_claim(text[], integer, uuid, text[], integer[])
    RETURNS SETOF evil.jobs LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadowed'; END $$;
CREATE FUNCTION evil.free_slot() RETURNS trigger
    LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'evil.free_slot ran'; END $$;
CREATE FUNCTION evil.repair_slots(text, text, integer) RETURNS void
    LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'evil.repair_slots ran'; END $$;
"""


def test_a_search_path_that_names_tables_and_functions_like_ours_changes_nothing(
    db_url: str,
) -> None:
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute(HOSTILE)  # type: ignore[arg-type]
        # Every new session of this database, the workers' pools' included.
        admin.execute(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET search_path = evil, public', "
            "current_database()); END $$"
        )
    with connect(db_url) as conn:
        assert conn.execute("SHOW search_path").fetchone() == ("evil, public",)
        # The triggers of pipeline.jobs (slots, joins, notifications) run with ours.
        job_id = enqueue(conn, "noop", {}, tenant_id="t1")
    with store(db_url) as jobs:
        claimed = jobs.claim(["noop"], 10, WORKER, caps={"noop": 1})
        assert [job.id for job in claimed] == [job_id]
        assert jobs.complete([claimed[0].fence]) == {job_id}
    with connect(db_url) as conn:
        noop = [s for s in read_stages(conn) if s.stage == "noop"]
        assert [(s.completed_1h, s.running) for s in noop] == [(1, 0)]
        assert held_slots(conn) == {("t1", "noop"): 0}
        migrate(conn)  # a migration under that search_path finds its own tables too
        for table in ("jobs", "outputs", "tenant_slots", "job_outputs", "pipeline_workers"):
            count = conn.execute(f"SELECT count(*) FROM evil.{table}").fetchone()  # type: ignore[arg-type]
            assert count == (0,), table
