"""Usage per attempt (issue 24, item 3): what each attempt consumed is written in the
statement that ends it, whatever the end, and summed per day, tenant, stage and counter in the
same transaction."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool
from pydantic import BaseModel

from pg_pipeline import Context, WorkerSettings, enqueue
from pg_pipeline.attempt_logs import AttemptLog
from pg_pipeline.queries import Q
from pg_pipeline.stage import Registry, stage
from pg_pipeline.store import JobStore
from pg_pipeline.testing import drain
from tests.integration import workers
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
REG = Registry()
WORKER = uuid.UUID(int=24)


class Metered(BaseModel):
    pages: int = 1
    fail_times: int = 0  #: attempts that raise after reporting
    spin_s: float = 0.0  #: CPU to burn
    refuse: bool = False  #: an on_complete step that raises: the completion is rolled back


def spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@stage("metered", registry=REG, max_attempts=3, backoff_base=0.01, backoff_cap=0.01)
def metered(job: Metered, ctx: Context) -> None:
    ctx.usage(pages=job.pages, model="m-1")
    ctx.usage(pages=job.pages, model="m-2")  # numbers add up, the last label wins
    spin(job.spin_s)
    if ctx.attempt <= job.fail_times:
        raise RuntimeError(f"upstream down on attempt {ctx.attempt}")
    if job.refuse:

        def broken(conn: Conn) -> None:
            raise RuntimeError("a bug in an on_complete step")

        ctx.on_complete(broken)


@stage("metered_async", registry=REG)
async def metered_async(job: Metered, ctx: Context) -> None:
    ctx.usage(tokens_in=100, tokens_out=20)
    spin(job.spin_s)
    await asyncio.sleep(0.05)  # its wait is no CPU of its own
    ctx.usage(tokens_in=1)


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        yield c


def attempt_rows(conn: Conn, job_id: int) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT outcome, wall_s, cpu_s, usage FROM pipeline.job_attempts WHERE job_id = %s"
        " ORDER BY claims",
        (job_id,),
    ).fetchall()


def history_row(conn: Conn, job_id: int) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT status, wall_s, cpu_s, usage FROM pipeline.job_history WHERE id = %s", (job_id,)
    ).fetchone()
    assert row is not None
    return tuple(row)


def rolled(conn: Conn, counter: str, tenant: str | None = None) -> tuple[float, int]:
    """(amount, attempts) of a counter in the rollup, all days and stages."""
    row = conn.execute(
        "SELECT coalesce(sum(amount), 0), coalesce(sum(attempts), 0)::int"
        " FROM pipeline.usage_by_day WHERE counter = %s AND tenant_id IS NOT DISTINCT FROM %s",
        (counter, tenant),
    ).fetchone()
    assert row is not None
    return float(row[0]), int(row[1])


def test_a_done_first_attempt_keeps_its_usage_on_the_history_row_and_in_the_rollup(
    db_url: str, conn: Conn
) -> None:
    job_id = enqueue(conn, "metered", {"pages": 2}, tenant_id="acme", registry=REG)
    assert drain(db_url, registry=REG).done == [job_id]

    status, wall_s, cpu_s, usage = history_row(conn, job_id)
    assert status == "done" and usage == {"pages": 4.0, "model": "m-2"}
    assert wall_s is not None and wall_s >= 0 and cpu_s is not None and cpu_s >= 0
    assert attempt_rows(conn, job_id) == []  # the common case writes no attempt row
    assert rolled(conn, "pages", "acme") == (4.0, 1)
    assert rolled(conn, "wall_s", "acme")[1] == 1 and rolled(conn, "cpu_s", "acme")[1] == 1
    assert rolled(conn, "pages") == (0.0, 0)  # untenanted jobs are rows of their own
    assert rolled(conn, "model", "acme") == (0.0, 0)  # labels are kept per attempt, not summed


def test_retried_and_failed_attempts_each_keep_what_they_consumed(db_url: str, conn: Conn) -> None:
    retried = enqueue(conn, "metered", {"pages": 1, "fail_times": 1}, registry=REG)
    failed = enqueue(conn, "metered", {"pages": 3, "fail_times": 9}, registry=REG)
    drained = drain(db_url, registry=REG)
    assert drained.done == [retried] and list(drained.failed) == [failed]

    rows = attempt_rows(conn, retried)
    assert [(r[0], r[3]) for r in rows] == [
        ("retried", {"pages": 2.0, "model": "m-2"}),
        ("done", {"pages": 2.0, "model": "m-2"}),
    ]
    assert all(r[1] is not None and r[2] is not None for r in rows)
    rows = attempt_rows(conn, failed)
    assert [(r[0], r[3]) for r in rows] == [
        ("retried", {"pages": 6.0, "model": "m-2"}),
        ("retried", {"pages": 6.0, "model": "m-2"}),
        ("failed", {"pages": 6.0, "model": "m-2"}),
    ]
    assert history_row(conn, failed)[3] == {"pages": 6.0, "model": "m-2"}
    # Every attempt once: 2 + 2 of the first job, 3 x 6 of the second.
    assert rolled(conn, "pages") == (22.0, 5)
    assert rolled(conn, "wall_s")[1] == 5


def test_a_refused_completion_records_the_attempt_once_with_the_failure(
    db_url: str, conn: Conn
) -> None:
    job_id = enqueue(conn, "metered", {"pages": 5, "refuse": True}, registry=REG)
    assert list(drain(db_url, registry=REG).failed) == [job_id]
    assert [(r[0], r[3]) for r in attempt_rows(conn, job_id)] == [
        ("failed", {"pages": 10.0, "model": "m-2"})
    ]
    assert rolled(conn, "pages") == (10.0, 1)


def test_a_retried_attempts_usage_is_rolled_up_without_locking_the_history(
    conn: Conn, pool: ConnectionPool
) -> None:
    # Reading the history for the job's stage locked its every partition and index.
    enqueue(conn, "metered", {}, registry=REG)
    [job] = JobStore(pool).claim(["metered"], 1, WORKER)
    params = {
        "id": job.id,
        "claims": job.claim,
        "delay_s": 0.0,
        "error": "upstream down",
        "outcome": "retried",
        "refund": False,
        "started": None,
        "logs": None,
        "dropped": 0,
        "wall_s": 2.0,
        "cpu_s": 1.0,
        "usage": psycopg.types.json.Jsonb({"pages": 3.0}),
    }
    with conn.transaction():
        assert conn.execute(Q["retry_later"], params).fetchone() is not None
        locked = conn.execute(
            "SELECT c.relname FROM pg_locks AS l JOIN pg_class AS c ON c.oid = l.relation"
            " WHERE l.pid = pg_backend_pid() AND c.relname LIKE 'job\\_history%%'"
        ).fetchall()
        assert locked == []
    assert rolled(conn, "pages") == (3.0, 1) and rolled(conn, "wall_s") == (2.0, 1)


def test_a_rolled_back_completion_records_nothing(conn: Conn, pool: ConnectionPool) -> None:
    job_id = enqueue(conn, "metered", {}, registry=REG)
    [job] = JobStore(pool).claim(["metered"], 1, WORKER)
    log = AttemptLog(time.time(), None, 0, 1.5, 0.5, {"pages": 7.0})
    params = {
        "ids": [job.id],
        "claims": [job.claim],
        "started": "{NULL}",
        "logs": None,
        "dropped": None,
        "wall_us": "{1500000}",
        "cpu_us": "{500000}",
        "usage": [psycopg.types.json.Jsonb(log.usage)],
    }
    with pytest.raises(RuntimeError), conn.transaction():
        assert conn.execute(Q["complete"], params).fetchall() == [(job_id,)]
        assert rolled(conn, "pages") == (7.0, 1)  # written in the completing transaction
        raise RuntimeError("the transaction rolls back")
    assert rolled(conn, "pages") == (0.0, 0) and rolled(conn, "wall_s") == (0.0, 0)
    assert JobStore(pool).complete([job.fence], {job.id: log}) == {job.id}
    assert rolled(conn, "pages") == (7.0, 1)
    assert rolled(conn, "wall_s") == (1.5, 1) and rolled(conn, "cpu_s") == (0.5, 1)


def test_a_batched_acknowledgement_carries_each_jobs_usage(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    ids = [enqueue(conn, "metered", {}, tenant_id=t, registry=REG) for t in ("a", "a", "b")]
    jobs = store.claim(["metered"], 3, WORKER)
    logs = {
        jobs[0].id: AttemptLog(time.time(), None, 0, 1.0, 0.25, {"tokens_in": 10.0}),
        jobs[1].id: AttemptLog(time.time(), None, 0, 2.0, 0.25, None),
        jobs[2].id: None,  # a worker that sent nothing (a child process's completion, say)
    }
    assert store.acknowledge([j.fence for j in jobs], lock_wait_s=1, logs=logs) == set(ids)
    assert rolled(conn, "wall_s", "a") == (3.0, 2) and rolled(conn, "cpu_s", "a") == (0.5, 2)
    assert rolled(conn, "tokens_in", "a") == (10.0, 1)
    assert rolled(conn, "wall_s", "b") == (0.0, 0)


def test_a_worker_measures_the_cpu_of_sync_and_async_stages(db_url: str, conn: Conn) -> None:
    sync_id = enqueue(conn, "metered", {"spin_s": 0.2}, registry=REG)
    async_id = enqueue(conn, "metered_async", {"spin_s": 0.2}, registry=REG)
    settings = WorkerSettings(concurrency=2, poll_interval_s=0.2, grace_period_s=5)
    with workers.running_worker(db_url, ["metered", "metered_async"], settings, registry=REG):
        wait_for(
            lambda: (
                conn.execute(
                    "SELECT count(*) FROM pipeline.job_history WHERE id = ANY(%s)",
                    ([sync_id, async_id],),
                ).fetchone()
                == (2,)
            ),
            what="both jobs to finish",
        )
    _, wall_s, cpu_s, _ = history_row(conn, sync_id)
    assert 0.2 <= cpu_s < 1.0 and wall_s >= cpu_s
    _, wall_s, cpu_s, usage = history_row(conn, async_id)
    assert usage == {"tokens_in": 101.0, "tokens_out": 20.0}
    assert 0.2 <= cpu_s < 1.0 and wall_s >= 0.25  # its sleep is wall time, not CPU


# -- pipeline.tenant_usage: the budgets' read ---------------------------------------------------


def tenant_usage(conn: Conn, tenant: str, stage: str | None, counter: str, since: str) -> float:
    row = conn.execute(
        "SELECT pipeline.tenant_usage(%s, %s, %s, %s::timestamptz)",
        (tenant, stage, counter, since),
    ).fetchone()
    assert row is not None
    return float(row[0])


def add(conn: Conn, day: str, tenant: str | None, stage: str, counter: str, amount: float) -> None:
    conn.execute(
        "SELECT pipeline.add_usage(ARRAY[%s::date], ARRAY[%s::text], ARRAY[%s], ARRAY[%s],"
        " ARRAY[%s::float8], ARRAY[1::bigint])",
        (day, tenant, stage, counter, amount),
    )


def test_tenant_usage_sums_a_tenants_counter_since_a_day_in_a_stage_or_all(conn: Conn) -> None:
    add(conn, "2026-11-30", "acme", "ocr", "pages", 100)
    add(conn, "2026-12-01", "acme", "ocr", "pages", 10)
    add(conn, "2026-12-01", "acme", "ocr", "pages", 5)  # the same row, added to
    add(conn, "2026-12-02", "acme", "extract", "pages", 1)
    add(conn, "2026-12-02", "other", "ocr", "pages", 1000)
    add(conn, "2026-12-02", None, "ocr", "pages", 1000)
    assert tenant_usage(conn, "acme", None, "pages", "2026-12-01T00:00:00Z") == 16
    assert tenant_usage(conn, "acme", "ocr", "pages", "2026-12-01T00:00:00Z") == 15
    # A time inside a day counts the whole day: the rollup keeps days.
    assert tenant_usage(conn, "acme", "ocr", "pages", "2026-11-30T23:00:00Z") == 115
    assert tenant_usage(conn, "acme", None, "tokens_in", "2026-11-01T00:00:00Z") == 0
    assert tenant_usage(conn, "nobody", None, "pages", "2026-11-01T00:00:00Z") == 0


def test_tenant_usage_of_cost_prices_every_priced_counter(conn: Conn) -> None:
    add(conn, "2026-12-02", "acme", "ocr", "pages", 10)
    add(conn, "2026-12-02", "acme", "extract", "tokens_in", 1000)
    add(conn, "2026-12-02", "acme", "extract", "cpu_s", 3)  # no price: no money
    assert tenant_usage(conn, "acme", None, "cost", "2026-12-01T00:00:00Z") == 0
    conn.execute(
        "INSERT INTO pipeline.prices (counter, price, currency)"
        " VALUES ('pages', 0.01, 'EUR'), ('tokens_in', 0.000002, 'EUR')"
    )
    assert tenant_usage(conn, "acme", None, "cost", "2026-12-01T00:00:00Z") == pytest.approx(0.102)
    assert tenant_usage(conn, "acme", "ocr", "cost", "2026-12-01T00:00:00Z") == pytest.approx(0.1)


def test_tenant_usage_reads_one_range_of_the_rollups_key(conn: Conn) -> None:
    plan = "\n".join(
        r[0]
        for r in conn.execute(
            "EXPLAIN (COSTS OFF) SELECT sum(amount) FROM pipeline.usage_by_day"
            " WHERE tenant_id = 'acme' AND counter = 'pages' AND day >= '2026-12-01'"
        )
    )
    assert "usage_by_day_key" in plan and "Seq Scan" not in plan
