"""Outputs, chaining and fan-out/fan-in, with the join counted in the database."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.pipeline_app  # noqa: F401  registers the pipeline stages
from pg_pipeline import enqueue
from pg_pipeline.queries import Q
from pg_pipeline.store import JobStore
from tests.integration.pipeline.worker.test_worker import FAST, running_worker
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
STAGES = ["split", "page", "assemble", "publish"]


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(EFFECTS_DDL)
        yield c


def count(conn: Conn, sql: str, *params: Any) -> int:
    row = conn.execute(sql, params or None).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return int(row[0])


def test_fan_out_runs_every_page_and_the_join_enqueues_the_next_stage_once(
    db_url: str, conn: Conn
) -> None:
    root = enqueue(conn, "split", {"pages": 40}, tenant_id="acme")
    with running_worker(db_url, STAGES, FAST.model_copy(update={"concurrency": 8})):
        wait_for(
            lambda: count(conn, "SELECT count(*) FROM effects WHERE note LIKE 'p0 %'"),
            timeout=60,
            what="the publish stage",
        )
    assert count(conn, "SELECT count(*) FROM pipeline.jobs WHERE type = 'assemble'") == 1
    assert count(conn, "SELECT count(*) FROM pipeline.jobs WHERE status <> 'done'") == 0
    assert count(conn, "SELECT count(*) FROM pipeline.outputs WHERE stage = 'page'") == 40
    published = conn.execute("SELECT note FROM effects WHERE note LIKE 'p0 %'").fetchall()
    assert published == [(" ".join(f"p{i}" for i in range(40)),)]
    runs = conn.execute(
        "SELECT DISTINCT coalesce(root_id, id), tenant_id FROM pipeline.jobs"
    ).fetchall()
    assert runs == [(root, "acme")]
    join = conn.execute("SELECT total, done, failed FROM pipeline.joins WHERE id = %s", (root,))
    assert join.fetchone() == (40, 40, 0)


def finish(store: JobStore, share: list[Any], start: threading.Barrier, into: list[int]) -> None:
    start.wait()
    for child in share:
        into.extend(store.complete([child.fence]))


def test_concurrent_finishers_enqueue_the_next_stage_exactly_once(
    conn: Conn, pool: ConnectionPool
) -> None:
    from pg_pipeline.context import Context
    from pg_pipeline.stage import REGISTRY

    for round_ in range(5):
        root = enqueue(conn, "split", {"pages": 60})
        ctx = Context(
            job_id=root,
            stage="split",
            attempt=1,
            max_attempts=1,
            tenant_id=None,
            parent_id=None,
            registry=REGISTRY,
        )
        ctx.fan_out("page", [{"page": i} for i in range(60)], then=("assemble", {"pages": 60}))
        with conn.transaction():
            for step in ctx.transaction_steps:
                step(conn)
        store = JobStore(pool)
        children = store.claim(["page"], 100, uuid.UUID(int=round_ + 1))
        assert len(children) == 60
        completed: list[int] = []
        threads = [
            threading.Thread(target=finish, args=(store, children[i::6], barrier, completed))
            for barrier in [threading.Barrier(6)]
            for i in range(6)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(completed) == sorted(c.id for c in children)
        assert (
            count(
                conn,
                "SELECT count(*) FROM pipeline.jobs WHERE type = 'assemble' AND parent_id = %s",
                root,
            )
            == 1
        )
        conn.execute("DELETE FROM pipeline.active_jobs WHERE type = 'assemble'")


def test_a_failed_page_stops_the_pipeline_and_a_retry_resumes_it(db_url: str, conn: Conn) -> None:
    root = enqueue(conn, "split", {"pages": 5, "fail_page": 3})
    with running_worker(db_url, STAGES):
        wait_for(
            lambda: (
                count(conn, "SELECT failed FROM pipeline.joins WHERE id = %s", root) == 1
                if count(conn, "SELECT count(*) FROM pipeline.joins")
                else False
            ),
            what="the failed page to be counted",
        )
        wait_for(
            lambda: count(conn, "SELECT done FROM pipeline.joins WHERE id = %s", root) == 4,
            what="the other pages",
        )
        assert count(conn, "SELECT count(*) FROM pipeline.jobs WHERE type = 'assemble'") == 0
        failed_page = count(
            conn, "SELECT id FROM pipeline.jobs WHERE type = 'page' AND status = 'failed'"
        )
        conn.execute(
            "UPDATE pipeline.job_history SET payload = '{\"page\": 3}' WHERE id = %s",
            (failed_page,),
        )
        assert conn.execute(Q["retry"], {"id": failed_page}).fetchall()
        wait_for(
            lambda: count(conn, "SELECT count(*) FROM effects WHERE note LIKE 'p0 %'"),
            what="the pipeline to finish after the retry",
        )
    assert count(conn, "SELECT count(*) FROM pipeline.jobs WHERE type = 'assemble'") == 1


def test_a_rerun_finds_its_output_and_does_not_redo_the_work(db_url: str, conn: Conn) -> None:
    root = enqueue(conn, "split", {"pages": 2})
    with running_worker(db_url, STAGES):
        wait_for(
            lambda: count(conn, "SELECT count(*) FROM effects WHERE note LIKE 'p0 %'"),
            what="the first run",
        )
        page0 = count(
            conn, "SELECT id FROM pipeline.jobs WHERE type = 'page' AND payload->>'page' = '0'"
        )
        conn.execute("UPDATE pipeline.job_history SET status = 'failed' WHERE id = %s", (page0,))
        assert conn.execute(Q["retry"], {"id": page0}).fetchall()
        wait_for(
            lambda: count(
                conn, "SELECT count(*) FROM pipeline.jobs WHERE id = %s AND status = 'done'", page0
            ),
            what="the re-run",
        )
    assert count(conn, "SELECT count(*) FROM effects WHERE note = 'page 0'") == 1
    # page 0, page 1 and assemble: one output each, whatever re-ran
    assert count(conn, "SELECT count(*) FROM pipeline.outputs WHERE root_id = %s", root) == 3
    assert count(conn, "SELECT count(*) FROM pipeline.jobs WHERE type = 'publish'") == 1
