"""enqueue on Django's connection (django.db.connection, connections[alias]) with Django 5 and
psycopg 3: in transaction.atomic() the job commits and rolls back with the block, a rolled-back
inner block (a savepoint) drops what was enqueued in it, and a connection Django has not opened
yet is opened."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection, connections, transaction

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import aenqueue, enqueue, enqueue_many, run_output, run_progress
from pg_pipeline.connections import NotAConnection
from pg_pipeline.enqueue import JobRequest
from pg_pipeline.queries import Q
from tests.support.django_project import use_database

Conn = psycopg.Connection[Any]


class Abandon(Exception):
    pass


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute("CREATE TABLE signups (id serial PRIMARY KEY, email text)")
        use_database(db_url)
        yield c
        connections.close_all()


def job_ids(conn: Conn) -> list[int]:
    return [row[0] for row in conn.execute("SELECT id FROM pipeline.jobs ORDER BY id")]


def emails(conn: Conn) -> list[str]:
    return [row[0] for row in conn.execute("SELECT email FROM signups ORDER BY id")]


def sign_up(email: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO signups (email) VALUES (%s)", [email])


def test_a_job_enqueued_in_atomic_commits_with_the_blocks_rows(conn: Conn) -> None:
    with transaction.atomic():
        sign_up("ada@example.com")
        job_id = enqueue(connection, "noop", {"n": 1})
        assert job_ids(conn) == []  # in Django's open transaction
    assert job_ids(conn) == [job_id] and emails(conn) == ["ada@example.com"]


def test_a_rolled_back_atomic_block_drops_the_job_with_its_rows(conn: Conn) -> None:
    with pytest.raises(Abandon), transaction.atomic():
        sign_up("ada@example.com")
        enqueue(connection, "noop", {"n": 1})
        enqueue_many(connection, [JobRequest("noop", {"n": n}) for n in range(3)])
        raise Abandon
    assert job_ids(conn) == [] and emails(conn) == []


def test_a_rolled_back_inner_atomic_block_drops_only_the_jobs_enqueued_in_it(
    conn: Conn,
) -> None:
    with transaction.atomic():
        kept = enqueue(connection, "noop", {"n": 1})
        with pytest.raises(Abandon), transaction.atomic():
            enqueue(connection, "noop", {"n": 2})
            sign_up("dropped@example.com")
            raise Abandon
        also_kept = enqueue(connections["default"], "noop", {"n": 3})
    assert job_ids(conn) == [kept, also_kept] and emails(conn) == []


def test_enqueue_opens_the_connection_django_has_not_opened_yet(conn: Conn) -> None:
    assert connections["default"].connection is None
    # Outside atomic(), Django's connection commits each statement, its own and ours alike.
    job_id = enqueue(connection, "noop", {"n": 1})
    assert connections["default"].connection is not None
    assert job_ids(conn) == [job_id]


def test_the_readers_take_a_django_connection_and_read_json_as_json(conn: Conn) -> None:
    root = enqueue(conn, "noop", {"n": 1})
    conn.execute(
        Q["save_output"],
        {
            "root_id": root,
            "stage": "noop",
            "part": None,
            "job_id": root,
            "attempt": 1,
            "output": psycopg.types.json.Jsonb({"pages": 3}),
            "code_version": "1",
        },
    )
    # Django's own connections read jsonb as text; the readers still give JSON.
    assert run_output(connection, root, "noop") == {"pages": 3}
    assert run_progress(connection, root) == run_progress(conn, root)


def test_the_async_api_on_a_django_connection_says_to_use_the_sync_one(conn: Conn) -> None:
    with pytest.raises(NotAConnection) as refused:
        asyncio.run(aenqueue(connection, "noop", {"n": 1}))  # type: ignore[arg-type]
    assert "Django's connections are not async" in str(refused.value)
    assert "use pg_pipeline.enqueue(...)" in str(refused.value)


def test_the_queues_connection_is_the_one_of_the_alias_the_setting_names(conn: Conn) -> None:
    from django.test import override_settings

    from pg_pipeline.contrib.django import connection as queue_connection

    assert queue_connection() is connections["default"]
    with transaction.atomic():
        job_id = enqueue(queue_connection(), "noop", {"n": 1})
    assert job_ids(conn) == [job_id]
    with override_settings(PG_PIPELINE_DATABASE=["default"]), pytest.raises(TypeError) as bad:
        queue_connection()
    assert "PG_PIPELINE_DATABASE must be a database alias" in str(bad.value)
