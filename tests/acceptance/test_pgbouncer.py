"""Behind PgBouncer in transaction mode: no server-side prepared statements, and LISTEN on a
direct connection or not at all."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

import psycopg
import pytest

import pg_pipeline
from pg_pipeline.commands.api import open_db
from pg_pipeline.db import LISTEN_URL_ENV, POOLER_ENV, PoolerError, connect, listen_dsn, make_pool
from pg_pipeline_documents.tender import TenderFields
from tests.acceptance.cli import REPO, WorkerProcess, run_cli
from tests.support.apps import jobs_app  # noqa: F401  (registers the stages enqueued here)
from tests.support.pgbouncer import PgBouncer
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]


@pytest.fixture
def bounced(db_url: str, pgbouncer: PgBouncer) -> str:
    """This test's database through PgBouncer."""
    return pgbouncer.url(db_url)


@pytest.fixture
def no_pooler_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(POOLER_ENV, raising=False)
    monkeypatch.delenv(LISTEN_URL_ENV, raising=False)


def is_done(conn: Conn, job_id: int) -> bool:
    return conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone() == (
        "done",
    )


def statuses(conn: Conn) -> dict[str, int]:
    rows = conn.execute("SELECT status, count(*) FROM pipeline.jobs GROUP BY status").fetchall()
    return {status: int(n) for status, n in rows}


@pytest.mark.usefixtures("no_pooler_settings")
def test_connections_through_pgbouncer_are_detected_and_prepare_nothing(
    db_url: str, bounced: str
) -> None:
    with connect(bounced) as through, connect(db_url) as direct:
        assert through.prepare_threshold is None
        assert direct.prepare_threshold is not None
    with connect(bounced, autocommit=False) as through:
        assert through.prepare_threshold is None
        assert through.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    pool = make_pool(bounced, max_size=2, name="pgbouncer test")
    try:
        with pool.connection() as pooled:
            assert pooled.prepare_threshold is None
    finally:
        pool.close()
    assert listen_dsn(bounced) is None
    assert listen_dsn(db_url) == db_url


@pytest.mark.usefixtures("no_pooler_settings")
def test_a_commands_connection_finds_pgbouncer_with_its_start_up_check(
    db_url: str, bounced: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # open_db reads the backend's pid in the check for pending changes, not in a probe.
    for url, through in ((bounced, True), (db_url, False)):
        monkeypatch.setenv("DATABASE_URL", url)
        _, conn = open_db()
        with conn:
            assert (conn.prepare_threshold is None) is through
            assert conn.autocommit


@pytest.mark.usefixtures("no_pooler_settings")
def test_pooler_settings_override_detection(
    db_url: str, bounced: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(POOLER_ENV, "transaction")
    with connect(db_url) as direct:
        assert direct.prepare_threshold is None
    assert listen_dsn(db_url) is None
    monkeypatch.setenv(LISTEN_URL_ENV, db_url)
    assert listen_dsn(bounced) == db_url
    monkeypatch.setenv(POOLER_ENV, "session")
    with connect(bounced) as through:
        assert through.prepare_threshold is not None
    monkeypatch.setenv(POOLER_ENV, "bouncy")
    with pytest.raises(PoolerError, match="expected auto, transaction, session or none"):
        connect(db_url)


@pytest.mark.usefixtures("no_pooler_settings")
def test_a_missed_pooler_fails_with_the_setting_that_fixes_it(
    bounced: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(POOLER_ENV, "none")
    with connect(bounced) as a, connect(bounced) as b, pytest.raises(PoolerError) as caught:
        # Both clients share PgBouncer's one idle server connection, where psycopg names each
        # one's first prepared statement _pg3_0.
        for _ in range(10):
            a.execute("SELECT 1")
            b.execute("SELECT 2")
    assert '"_pg3_0"' in str(caught.value)
    assert f"{POOLER_ENV}=transaction" in str(caught.value)


def test_worker_without_pooler_mode_stops_with_advice_behind_pgbouncer(
    env: dict[str, str],
    conn: Conn,
    bounced: str,
    start_worker: Callable[..., WorkerProcess],
) -> None:
    for n in range(50):
        pg_pipeline.enqueue(conn, "noop", {"n": n})
    # The failure as reported: the claim loop's statements get prepared and then collide.
    worker = start_worker(
        "--no-listen", environ={**env, "DATABASE_URL": bounced, POOLER_ENV: "none"}
    )
    assert worker.wait(timeout=30) == 1, worker.log()
    assert 'prepared statement "_pg3_' in worker.log()
    assert f"Set {POOLER_ENV}=transaction" in worker.log()


def test_worker_runs_jobs_enqueued_through_pgbouncer_in_pooler_mode(
    env: dict[str, str],
    conn: Conn,
    bounced: str,
    start_worker: Callable[..., WorkerProcess],
) -> None:
    pooled_env = {**env, "DATABASE_URL": bounced, POOLER_ENV: "transaction"}
    worker = start_worker("--concurrency", "4", environ=pooled_env)
    ids = []
    for n in range(3):
        enqueued = run_cli(pooled_env, "enqueue", "effect", json.dumps({"n": n}))
        assert enqueued.returncode == 0, enqueued.stderr
        ids.append(int(enqueued.stdout))
    with connect(bounced) as through:
        # The same INSERT 200 times on one connection: psycopg would have prepared it.
        for n in range(200):
            pg_pipeline.enqueue(through, "noop", {"n": n})
    wait_for(lambda: statuses(conn) == {"done": 203}, what="every job to run through PgBouncer")
    notes = conn.execute("SELECT note FROM effects ORDER BY note").fetchall()
    assert notes == [("n=0",), ("n=1",), ("n=2",)]
    assert worker.alive(), worker.log()
    assert "Traceback" not in worker.log(), worker.log()


def test_listen_url_wakes_a_worker_behind_pgbouncer(
    env: dict[str, str],
    conn: Conn,
    db_url: str,
    bounced: str,
    start_worker: Callable[..., WorkerProcess],
) -> None:
    pooled_env = {
        **env,
        "DATABASE_URL": bounced,
        POOLER_ENV: "transaction",
        LISTEN_URL_ENV: db_url,
    }
    # Polls 30 s apart: a job picked up within seconds was woken by its notification.
    worker = start_worker("--poll-interval", "30", environ=pooled_env)
    # PgBouncer appends the client's address to the application_name of its sessions, so this
    # is the listener's own direct session, idle once LISTEN (and the poll after it) ran.
    listening = (
        "SELECT 1 FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = 'pg-pipeline listener' AND state = 'idle'"
    )
    wait_for(lambda: conn.execute(listening).fetchone(), what="the listener on the direct DSN")
    with connect(bounced) as through:
        for n in range(3):
            job_id = pg_pipeline.enqueue(through, "effect", {"n": n})
            wait_for(partial(is_done, conn, job_id), timeout=5, what=f"job {n} to be woken")
    assert worker.alive(), worker.log()


def test_submit_wait_completes_through_pgbouncer_without_settings(
    env: dict[str, str], bounced: str
) -> None:
    unset = (POOLER_ENV, LISTEN_URL_ENV)
    result = run_cli(
        {**{k: v for k, v in env.items() if k not in unset}, "DATABASE_URL": bounced},
        "submit",
        str(REPO / "sample_docs" / "tender.pdf"),
        "--tenant",
        "acme",
        "--wait",
        "--workers",
        "2",
        "--timeout",
        "120",
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    truth = json.loads((REPO / "sample_docs" / "ground_truth" / "tender.json").read_text())
    assert TenderFields.model_validate(printed["fields"]) == TenderFields.model_validate(
        truth["fields"]
    )
