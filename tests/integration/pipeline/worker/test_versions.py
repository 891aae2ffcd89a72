"""A rolling deploy with real Workers: an old worker whose model of a stage rejects a payload
written for the new model leaves the job to a new worker, uncharged, instead of failing it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from pydantic import BaseModel

from pg_pipeline import Context, WorkerSettings
from pg_pipeline.stage import Registry, stage
from tests.integration.workers import running_worker
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
OLD, NEW = Registry(), Registry()
OLD_RAN: list[Any] = []
NEW_MAY_GO = threading.Event()


class PagesBefore(BaseModel):
    pages: int  # how many pages


class PagesAfter(BaseModel):
    pages: list[int]  # which pages: the new version's payload


@stage("reshaped", lease=30, registry=OLD)
def reshaped_before(job: PagesBefore, ctx: Context) -> None:
    OLD_RAN.append(job)


@stage("reshaped", lease=30, registry=NEW)
def reshaped_after(job: PagesAfter, ctx: Context) -> None:
    NEW_MAY_GO.wait(timeout=60)


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        yield c


def count(conn: Conn, where: str) -> int:
    row = conn.execute(f"SELECT count(*) FROM pipeline.jobs WHERE {where}").fetchone()
    return int(row[0]) if row else 0


def test_an_old_worker_leaves_a_payload_of_the_new_version_to_a_new_worker_uncharged(
    db_url: str, conn: Conn
) -> None:
    quick = WorkerSettings(poll_interval_s=0.2, reclaim_interval_s=0.5, grace_period_s=5)
    NEW_MAY_GO.clear()
    # The new worker runs one job at a time and holds on to it until told, so the old worker
    # claims the others.
    with running_worker(
        db_url,
        ["reshaped"],
        quick.model_copy(update={"concurrency": 1, "prefetch": 0}),
        registry=NEW,
    ):
        wait_for(
            lambda: conn.execute("SELECT count(*) FROM pipeline.workers").fetchone() == (1,),
            what="the new worker to register",
        )
        with running_worker(db_url, ["reshaped"], quick, registry=OLD):
            conn.execute(
                "INSERT INTO pipeline.active_jobs (type, payload) "
                "SELECT 'reshaped', jsonb_build_object('pages', jsonb_build_array(g, g + 1)) "
                "FROM generate_series(1, 6) AS g"
            )
            wait_for(
                lambda: count(conn, "status = 'queued' AND last_error LIKE 'left for %'") >= 3,
                timeout=30,
                what="the old worker to leave the jobs it claimed",
            )
        # The deploy goes on: the old worker has stopped, and the new one gets going.
        NEW_MAY_GO.set()
        wait_for(lambda: count(conn, "status = 'done'") == 6, timeout=60, what="all to be done")
    assert count(conn, "attempts = 1") == 6, "an old worker's rejection was charged"
    assert OLD_RAN == []
