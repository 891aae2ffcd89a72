"""Workers killed, paused and stopped with real signals; the database restarted under them."""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pg_pipeline import JobRequest, enqueue, enqueue_many
from pg_pipeline.embedded import embedded_url
from pg_pipeline.migrate import migrate
from tests.acceptance.cli import WorkerProcess, cli_env
from tests.support import pg
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
StartWorker = Callable[..., WorkerProcess]


def job(conn: Conn, job_id: int) -> tuple[Any, ...]:
    row = conn.execute(
        "SELECT status, attempts, last_error, worker_id FROM pipeline.jobs WHERE id = %s", (job_id,)
    ).fetchone()
    assert row is not None
    return tuple(row)


def effects(conn: Conn) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT job_id, attempt, pid FROM effects ORDER BY job_id, attempt"
    ).fetchall()


def test_sigkilled_worker_job_is_reclaimed_and_finished_by_another(
    conn: Conn, start_worker: StartWorker
) -> None:
    job_id = enqueue(conn, "nap", {"seconds": 3})
    first = start_worker("--stage", "nap")
    wait_for(lambda: job(conn, job_id)[0] == "running", what="the first worker to claim")
    first.signal(signal.SIGKILL)
    assert first.wait() == -signal.SIGKILL

    start_worker("--stage", "nap")
    wait_for(lambda: job(conn, job_id)[0] == "done", timeout=60, what="the job to be finished")
    # The crash was not the job's doing: its attempt was refunded, and it ran once more.
    assert job(conn, job_id)[:2] == ("done", 1)
    [(effect_job, attempt, pid)] = effects(conn)
    assert (effect_job, attempt) == (job_id, 1) and pid != first.pid


def test_job_that_kills_its_worker_every_time_ends_failed_with_the_crash_as_reason(
    conn: Conn, start_worker: StartWorker, tmp_path: Path
) -> None:
    runs = tmp_path / "runs.txt"
    job_id = enqueue(conn, "doomed", {"runs_file": str(runs)})
    first = start_worker("--stage", "doomed")
    assert first.wait() == -signal.SIGKILL
    # The next worker runs the suspect alone in a child process: the child dies, not it.
    second = start_worker("--stage", "doomed")
    wait_for(lambda: job(conn, job_id)[0] == "failed", timeout=60, what="the job to fail")
    status, attempts, error, _ = job(conn, job_id)
    assert (status, attempts) == ("failed", 3)
    assert error == "crashed its worker process (killed by SIGKILL) while running in isolation"
    # The first death was not charged; each of the three runs in isolation was.
    assert runs.read_text().split() == ["1", "1", "2", "3"]
    assert second.alive()


def test_a_poison_job_costs_its_bystanders_nothing(
    conn: Conn, start_worker: StartWorker, tmp_path: Path
) -> None:
    naps = enqueue_many(conn, [JobRequest("nap", {"seconds": 1.5}) for _ in range(3)])
    first = start_worker("--stage", "nap", "--stage", "doomed", "--concurrency", "4")
    wait_for(lambda: all(job(conn, n)[0] == "running" for n in naps), what="the naps to start")
    poison = enqueue(conn, "doomed", {"runs_file": str(tmp_path / "runs.txt")})
    assert first.wait() == -signal.SIGKILL
    start_worker("--stage", "nap", "--stage", "doomed", "--concurrency", "4")
    wait_for(
        lambda: job(conn, poison)[0] == "failed" and all(job(conn, n)[0] == "done" for n in naps),
        timeout=90,
        what="the poison job to fail and its bystanders to finish",
    )
    assert [job(conn, n)[:2] for n in naps] == [("done", 1)] * 3
    assert "crashed its worker process" in job(conn, poison)[2]
    assert sorted(e[0] for e in effects(conn)) == sorted(naps)


def test_worker_paused_past_its_lease_writes_nothing_when_resumed(
    conn: Conn, start_worker: StartWorker
) -> None:
    job_id = enqueue(conn, "nap", {"seconds": 3})
    stale = start_worker("--stage", "nap")
    wait_for(lambda: job(conn, job_id)[0] == "running", what="the first worker to claim")
    stale.signal(signal.SIGSTOP)
    start_worker("--stage", "nap")
    wait_for(lambda: job(conn, job_id)[0] == "done", timeout=60, what="the fresh worker")
    stale.signal(signal.SIGCONT)
    # The settlement's line for a claim that lost its job (pg_pipeline.logs).
    lost = re.compile(rf"job {job_id} \(nap, tenant -, attempt 1/\d+\) lost: ")
    wait_for(lambda: lost.search(stale.log()), what="the stale worker to notice")
    [(effect_job, attempt, pid)] = effects(conn)
    assert (effect_job, attempt) == (job_id, 1) and pid != stale.pid
    assert job(conn, job_id)[:2] == ("done", 1)
    assert stale.alive(), "losing a lease must not kill the worker"


def test_sigterm_lets_running_jobs_finish_then_exits_zero(
    conn: Conn, start_worker: StartWorker
) -> None:
    ids = enqueue_many(conn, [JobRequest("nap", {"seconds": 1.5}) for _ in range(2)])
    worker = start_worker("--stage", "nap", "--concurrency", "2", "--grace", "30")
    wait_for(lambda: all(job(conn, i)[0] == "running" for i in ids), what="both jobs to start")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0
    assert [job(conn, i)[0] for i in ids] == ["done", "done"]
    assert sorted(e[0] for e in effects(conn)) == sorted(ids)
    assert conn.execute("SELECT count(*) FROM pipeline.workers").fetchone() == (0,)


def test_sigterm_releases_jobs_that_outlast_the_grace_period(
    conn: Conn, start_worker: StartWorker
) -> None:
    job_id = enqueue(conn, "nap", {"seconds": 120}, max_attempts=1)
    worker = start_worker("--stage", "nap", "--grace", "0.5")
    wait_for(lambda: job(conn, job_id)[0] == "running", what="the job to start")
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    status, attempts, error, worker_id = job(conn, job_id)
    assert (status, attempts, error, worker_id) == (
        "queued",
        0,
        "released at worker shutdown",
        None,
    )
    assert effects(conn) == []
    log = worker.log()
    assert re.search(r"waiting up to \d+ s for 1 running job$", log, re.MULTILINE), log
    assert f"released 1 job back to the queue: [{job_id}]" in log, log


@pytest.fixture
def private_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A server of the test's own, whatever DATABASE_URL says: this test restarts it."""
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix="pgr-"))
    url = embedded_url(scratch / "pgdata")
    yield url, scratch / "pgdata"
    pg.stop_server(scratch / "pgdata")


def test_worker_survives_a_postgres_restart_and_finishes_every_job(
    private_server: tuple[str, Path], tmp_path: Path
) -> None:
    url, pgdata = private_server
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        conn.execute(EFFECTS_DDL)
        enqueue_many(conn, [JobRequest("nap", {"seconds": 0.02}) for _ in range(300)])
    worker = WorkerProcess(
        cli_env(url, tmp_path / "home"),
        tmp_path / "worker.log",
        "--stage",
        "nap",
        "--concurrency",
        "4",
    )
    try:

        def done() -> int:
            with psycopg.connect(url) as c:
                row = c.execute(
                    "SELECT count(*) FROM pipeline.jobs WHERE status = 'done'"
                ).fetchone()
                return int(row[0]) if row else 0

        wait_for(lambda: done() >= 20, what="some jobs to finish before the restart")
        pg.restart_server(pgdata)
        assert done() < 300, "every job finished before the restart; nothing was tested"
        wait_for(lambda: done() == 300, timeout=120, what="every job after the restart")
        assert worker.alive(), "the worker died with the database"
        with psycopg.connect(url) as c:
            counts = c.execute("SELECT count(*), count(DISTINCT job_id) FROM effects").fetchone()
        assert counts == (300, 300)
        worker.signal(signal.SIGTERM)
        assert worker.wait() == 0
        assert "database unavailable" in worker.log()
    finally:
        worker.close()
