"""A database without pg-pipeline's schema: every kind of connection gets one error that says
what to run, not psycopg's, which quotes the library's SQL (`LINE 2: INSERT INTO ...`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import psycopg
import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

import pg_pipeline
import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from tests.support import pg


@pytest.fixture
def bare_url(server_url: str) -> Iterator[str]:
    with pg.empty_database(server_url) as url:
        yield url


def on_psycopg(url: str) -> None:
    with psycopg.connect(url) as conn:
        pg_pipeline.enqueue(conn, "noop", {"n": 1})


def on_async_psycopg(url: str) -> None:
    async def main() -> None:
        async with await psycopg.AsyncConnection.connect(url) as conn:
            await pg_pipeline.arun_progress(conn, 1)

    asyncio.run(main())


def on_sqlalchemy(url: str) -> None:
    engine = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(url))
    try:
        with Session(engine) as session:
            pg_pipeline.enqueue_many(session, [pg_pipeline.JobRequest("noop", {"n": 1})])
    finally:
        engine.dispose()


CALLS: dict[str, Callable[[str], None]] = {
    "psycopg": on_psycopg,
    "async psycopg": on_async_psycopg,
    "sqlalchemy": on_sqlalchemy,
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_a_database_without_the_schema_is_named_with_what_to_run_and_no_sql(
    bare_url: str, call: Callable[[str], None]
) -> None:
    with pytest.raises(pg_pipeline.SchemaMissing) as refused:
        call(bare_url)
    message = str(refused.value)
    assert "run `pipeline migrate`" in message and "manage.py migrate" in message
    assert "does not exist" in message  # PostgreSQL's reason, without the statement
    assert "INSERT" not in message and "SELECT" not in message and "LINE" not in message
