"""enqueue on what a SQLAlchemy 2 application holds (a Session, a Connection, their async
kinds), in that application's transaction: the job commits and rolls back with its rows, a
rolled-back nested transaction (a savepoint) drops what was enqueued in it, and an engine that
has not connected yet connects."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, insert
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.orm import Session, scoped_session, sessionmaker

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import aenqueue, aenqueue_many, arun_progress, enqueue, enqueue_once, run_progress
from pg_pipeline.connections import NotAConnection
from pg_pipeline.enqueue import JobRequest

Conn = psycopg.Connection[Any]

METADATA = MetaData()
SIGNUPS = Table(
    "signups", METADATA, Column("id", Integer, primary_key=True), Column("email", String)
)


class Abandon(Exception):
    pass


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        yield c


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    made = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(db_url))
    METADATA.create_all(made)
    made.dispose()  # so that each test starts before the engine has connected
    yield made
    made.dispose()


def async_engine(db_url: str) -> AsyncEngine:
    async def connect() -> psycopg.AsyncConnection[Any]:
        return await psycopg.AsyncConnection.connect(db_url)

    return create_async_engine("postgresql+psycopg_async://", async_creator=connect)


def job_ids(conn: Conn) -> list[int]:
    return [row[0] for row in conn.execute("SELECT id FROM pipeline.jobs ORDER BY id")]


def emails(conn: Conn) -> list[str]:
    return [row[0] for row in conn.execute("SELECT email FROM signups ORDER BY id")]


def test_a_job_enqueued_on_a_session_commits_with_the_sessions_rows(
    engine: Engine, conn: Conn
) -> None:
    assert engine.pool.checkedout() == 0 and engine.pool.checkedin() == 0  # not connected yet
    with Session(engine) as session:
        session.execute(insert(SIGNUPS).values(email="ada@example.com"))
        job_id = enqueue(session, "noop", {"n": 1})
        assert job_ids(conn) == []  # in the session's open transaction
        session.commit()
    assert job_ids(conn) == [job_id] and emails(conn) == ["ada@example.com"]


def test_a_session_that_has_not_connected_yet_connects_and_keeps_the_job(
    engine: Engine, conn: Conn
) -> None:
    with Session(engine) as session:
        job_id = enqueue(session, "noop", {"n": 1})  # the session's first statement
        session.commit()
    assert job_ids(conn) == [job_id]


def test_a_rolled_back_session_drops_the_job_with_its_rows(engine: Engine, conn: Conn) -> None:
    with Session(engine) as session:
        session.execute(insert(SIGNUPS).values(email="ada@example.com"))
        enqueue(session, "noop", {"n": 1})
        session.rollback()
    with pytest.raises(Abandon), Session(engine) as session, session.begin():
        enqueue(session, "noop", {"n": 2})
        raise Abandon
    assert job_ids(conn) == [] and emails(conn) == []


def test_a_rolled_back_nested_transaction_drops_only_the_jobs_enqueued_in_it(
    engine: Engine, conn: Conn
) -> None:
    with Session(engine) as session:
        kept = enqueue(session, "noop", {"n": 1})
        with pytest.raises(Abandon), session.begin_nested():
            enqueue(session, "noop", {"n": 2})
            session.execute(insert(SIGNUPS).values(email="dropped@example.com"))
            raise Abandon
        also_kept = enqueue(session, "noop", {"n": 3})
        session.commit()
    assert job_ids(conn) == [kept, also_kept] and emails(conn) == []


def test_a_job_enqueued_on_a_connection_commits_with_it_and_not_without(
    engine: Engine, conn: Conn
) -> None:
    with engine.connect() as connection:
        kept = enqueue(connection, "noop", {"n": 1})
        connection.commit()
        enqueue(connection, "noop", {"n": 2})  # never committed: dropped when it closes
    with engine.begin() as connection:
        also_kept, new = enqueue_once(connection, "noop", {"n": 3}, dedup_key="once")
    assert new and job_ids(conn) == [kept, also_kept]


def test_a_savepoint_of_a_connection_drops_what_was_enqueued_in_it(
    engine: Engine, conn: Conn
) -> None:
    with engine.begin() as connection:
        kept = enqueue(connection, "noop", {"n": 1})
        savepoint = connection.begin_nested()
        enqueue(connection, "noop", {"n": 2})
        savepoint.rollback()
    assert job_ids(conn) == [kept]


def test_a_scoped_session_enqueues_in_the_session_of_the_scope(engine: Engine, conn: Conn) -> None:
    scoped = scoped_session(sessionmaker(engine))
    job_id = enqueue(scoped, "noop", {"n": 1})
    scoped.commit()
    scoped.remove()
    assert job_ids(conn) == [job_id]


def test_the_readers_take_a_session_too(engine: Engine, conn: Conn) -> None:
    root = enqueue(conn, "noop", {"n": 1})
    with Session(engine) as session:
        assert run_progress(session, root) == run_progress(conn, root)


def test_an_async_session_commits_rolls_back_and_keeps_savepoints(db_url: str, conn: Conn) -> None:
    async def main() -> list[int]:
        engine = async_engine(db_url)
        try:
            async with AsyncSession(engine) as session:  # not connected yet
                kept = await aenqueue(session, "noop", {"n": 1})
                nested = await session.begin_nested()
                await aenqueue_many(session, [JobRequest("noop", {"n": 2})])
                await nested.rollback()
                await session.commit()
            async with AsyncSession(engine) as session:
                await aenqueue(session, "noop", {"n": 3})
                await session.rollback()
            async with engine.connect() as connection:
                also_kept = await aenqueue(connection, "noop", {"n": 4})
                assert await arun_progress(connection, also_kept) != []
                await connection.commit()
            return [kept, also_kept]
        finally:
            await engine.dispose()

    kept = asyncio.run(main())
    assert job_ids(conn) == kept


def test_the_async_api_on_a_sync_session_says_to_use_the_sync_one(engine: Engine) -> None:
    with Session(engine) as session, pytest.raises(NotAConnection) as refused:
        asyncio.run(aenqueue(session, "noop", {"n": 1}))  # type: ignore[arg-type]
    assert "sqlalchemy.orm.session.Session" in str(refused.value)
    assert "use pg_pipeline.enqueue(...)" in str(refused.value)


def test_the_sync_api_on_an_async_session_says_to_await_the_async_one(db_url: str) -> None:
    session = AsyncSession(async_engine(db_url))
    with pytest.raises(NotAConnection) as refused:
        enqueue(session, "noop", {"n": 1})  # type: ignore[arg-type]
    assert "AsyncSession" in str(refused.value) and "await pg_pipeline.aenqueue(" in str(
        refused.value
    )
