"""The async API on a psycopg AsyncConnection: in the caller's transaction like the sync one
(commit keeps, rollback drops, a savepoint's rollback drops what came after it), storing the
same rows, and reading a run the way the sync readers do."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import psycopg
import pytest

import pg_pipeline
import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import InvalidPayload, JobRequest, enqueue, live_workers, run_output, run_progress
from pg_pipeline.connections import NotAConnection
from pg_pipeline.queries import Q
from tests.support.history import finish

Conn = psycopg.Connection[Any]
AConn = psycopg.AsyncConnection[Any]


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        yield c


def on_async(db_url: str, body: Callable[[AConn], Awaitable[Any]], **connect: Any) -> Any:
    """Run `body` on a fresh AsyncConnection to the test's database, as an application would."""

    async def main() -> Any:
        async with await psycopg.AsyncConnection.connect(db_url, **connect) as aconn:
            return await body(aconn)

    return asyncio.run(main())


def job_ids(conn: Conn) -> list[int]:
    return [row[0] for row in conn.execute("SELECT id FROM pipeline.jobs ORDER BY id")]


def test_a_job_enqueued_in_a_committed_async_transaction_is_kept(db_url: str, conn: Conn) -> None:
    async def body(aconn: AConn) -> int:
        async with aconn.transaction():
            return await pg_pipeline.aenqueue(aconn, "noop", {"n": 1}, tenant_id="acme")

    job_id = on_async(db_url, body)
    assert job_ids(conn) == [job_id]


def test_a_job_enqueued_in_a_rolled_back_async_transaction_is_gone(db_url: str, conn: Conn) -> None:
    class Abandon(Exception):
        pass

    async def body(aconn: AConn) -> None:
        with pytest.raises(Abandon):
            async with aconn.transaction():
                await pg_pipeline.aenqueue(aconn, "noop", {"n": 1})
                await pg_pipeline.aenqueue_many(
                    aconn, [JobRequest("noop", {"n": n}) for n in range(3)]
                )
                raise Abandon

    on_async(db_url, body)
    assert job_ids(conn) == []


def test_a_rolled_back_savepoint_drops_only_the_jobs_enqueued_after_it(
    db_url: str, conn: Conn
) -> None:
    async def body(aconn: AConn) -> int:
        # Not autocommit: the application's own transaction, committed at the end.
        kept = await pg_pipeline.aenqueue(aconn, "noop", {"n": 1})
        async with aconn.transaction(force_rollback=True):
            await pg_pipeline.aenqueue(aconn, "noop", {"n": 2})
            await pg_pipeline.aenqueue_many(aconn, [JobRequest("noop", {"n": 3})])
        await aconn.commit()
        return kept

    kept = on_async(db_url, body, autocommit=False)
    assert job_ids(conn) == [kept]


def test_an_async_enqueue_left_uncommitted_is_gone_when_the_connection_closes(
    db_url: str, conn: Conn
) -> None:
    async def main() -> None:
        # Closed, not left through `async with`, which would commit.
        aconn = await psycopg.AsyncConnection.connect(db_url)
        await pg_pipeline.aenqueue(aconn, "noop", {"n": 1})
        assert job_ids(conn) == []  # not visible outside the open transaction
        await aconn.close()

    asyncio.run(main())
    assert job_ids(conn) == []


def test_async_and_sync_enqueue_store_the_same_row(db_url: str, conn: Conn) -> None:
    columns = "type, tenant_id, payload, priority, max_attempts, lease_seconds, dedup_key, status"
    arguments: dict[str, Any] = {"tenant_id": 7, "priority": 3, "max_attempts": 2}
    sync_id = enqueue(conn, "noop", {"n": 5}, dedup_key="sync", **arguments)

    async def body(aconn: AConn) -> int:
        return await pg_pipeline.aenqueue(aconn, "noop", {"n": 5}, dedup_key="async", **arguments)

    async_id = on_async(db_url, body, autocommit=True)
    rows = {
        job_id: conn.execute(
            f"SELECT {columns} FROM pipeline.jobs WHERE id = %s", [job_id]
        ).fetchone()
        for job_id in (sync_id, async_id)
    }
    sync_row, async_row = rows[sync_id], rows[async_id]
    assert sync_row is not None and async_row is not None
    assert sync_row[:6] == async_row[:6] and sync_row[7] == async_row[7]
    assert (sync_row[6], async_row[6]) == ("sync", "async")


def test_aenqueue_once_returns_the_job_that_holds_the_key(db_url: str, conn: Conn) -> None:
    async def body(aconn: AConn) -> tuple[tuple[int, bool], tuple[int, bool]]:
        first = await pg_pipeline.aenqueue_once(aconn, "noop", {"n": 1}, dedup_key="invoice-9")
        again = await pg_pipeline.aenqueue_once(aconn, "noop", {"n": 2}, dedup_key="invoice-9")
        return first, again

    (first_id, new), (again_id, again_new) = on_async(db_url, body, autocommit=True)
    assert (new, again_new) == (True, False) and again_id == first_id
    assert job_ids(conn) == [first_id]


def test_aenqueue_many_inserts_none_when_one_payload_is_bad(db_url: str, conn: Conn) -> None:
    async def body(aconn: AConn) -> None:
        with pytest.raises(InvalidPayload):
            await pg_pipeline.aenqueue_many(
                aconn, [JobRequest("noop", {"n": 1}), JobRequest("noop", {"n": "many"})]
            )

    on_async(db_url, body, autocommit=True)
    assert job_ids(conn) == []


def test_the_async_readers_read_a_run_as_the_sync_ones_do(db_url: str, conn: Conn) -> None:
    root = enqueue(conn, "noop", {"n": 0})
    child = enqueue(conn, "effect", {"n": 1}, root_id=root, parent_id=root)
    enqueue(conn, "effect", {"n": 2}, root_id=root, parent_id=root)
    finish(conn, child, "failed", error="no such file")
    conn.execute(
        Q["save_output"],
        {
            "root_id": root,
            "stage": "effect",
            "part": None,
            "job_id": child,
            "attempt": 1,
            "output": psycopg.types.json.Jsonb({"pages": 3}),
            "code_version": "1",
        },
    )

    async def body(aconn: AConn) -> tuple[Any, ...]:
        return (
            await pg_pipeline.arun_progress(aconn, root),
            await pg_pipeline.arun_output(aconn, root, "effect"),
            await pg_pipeline.arun_output(aconn, root, "noop"),
            await pg_pipeline.alive_workers(aconn, "noop"),
        )

    progress, output, no_output, workers = on_async(db_url, body, autocommit=True)
    assert progress == run_progress(conn, root)
    assert {p.stage: (p.total, p.failed, p.error) for p in progress} == {
        "noop": (1, 0, None),
        "effect": (2, 1, "no such file"),
    }
    assert output == run_output(conn, root, "effect") == {"pages": 3}
    assert no_output is None and workers == live_workers(conn, "noop") == 0


def test_sync_enqueue_on_an_async_connection_says_to_await_aenqueue(db_url: str) -> None:
    async def body(aconn: AConn) -> None:
        with pytest.raises(NotAConnection) as refused:
            enqueue(aconn, "noop", {"n": 1})  # type: ignore[arg-type]
        assert "psycopg.AsyncConnection" in str(refused.value)
        assert "await pg_pipeline.aenqueue(" in str(refused.value)

    on_async(db_url, body)


def test_aenqueue_on_a_sync_connection_says_to_use_enqueue(conn: Conn) -> None:
    with pytest.raises(NotAConnection) as refused:
        asyncio.run(pg_pipeline.aenqueue(conn, "noop", {"n": 1}))  # type: ignore[arg-type]
    assert "psycopg.Connection" in str(refused.value)
    assert "use pg_pipeline.enqueue(...)" in str(refused.value)
