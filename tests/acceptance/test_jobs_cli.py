"""`pipeline jobs` and `pipeline prune` as an operator types them, against a real database."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

import tests.support.apps.blobs_app  # noqa: F401  registers the blob stages
from pg_pipeline import enqueue
from pg_pipeline.blobs import LocalBlobStore
from tests.acceptance.cli import WorkerProcess, run_cli
from tests.integration.pipeline.test_blobs import free_port
from tests.support.history import finish, make_past_days
from tests.support.s3_server import DUMMY_AWS_ENV
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]


def one(conn: Conn, sql: str, *params: Any) -> Any:
    row = conn.execute(sql, params or None).fetchone()
    assert row is not None
    return row[0]


def insert(conn: Conn, n: int, type_: str, tenant: str | None, status: str) -> list[int]:
    table = "active_jobs" if status in ("queued", "running") else "job_history"
    rows = conn.execute(  # type: ignore[call-overload]
        f"INSERT INTO pipeline.{table} (type, tenant_id, status, attempts, max_attempts, "
        "finished_at, last_error) SELECT %s, %s, %s, 1, 1, "
        "CASE WHEN %s IN ('done', 'failed', 'cancelled') THEN now() END, "
        "CASE WHEN %s = 'failed' THEN 'upstream down' END "
        "FROM generate_series(1, %s) RETURNING id",
        (type_, tenant, status, status, status, n),
    ).fetchall()
    return [r[0] for r in rows]


def statuses(conn: Conn, ids: list[int]) -> set[str]:
    rows = conn.execute("SELECT DISTINCT status FROM pipeline.jobs WHERE id = ANY(%s)", (ids,))
    return {r[0] for r in rows}


def test_list_filters_and_show_are_scoped_to_the_tenant_given(
    env: dict[str, str], conn: Conn
) -> None:
    mine = int(run_cli(env, "enqueue", "noop", '{"n": 7}', "--tenant", "acme").stdout)
    theirs = int(run_cli(env, "enqueue", "noop", '{"n": 99}', "--tenant", "globex").stdout)
    failed = insert(conn, 2, "effect", "acme", "failed")
    old = insert(conn, 1, "effect", "acme", "done")
    conn.execute(
        "UPDATE pipeline.job_history SET created_at = now() - interval '2 days' WHERE id = %s",
        (old[0],),
    )

    listed = run_cli(env, "jobs", "list", "--tenant", "acme", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [j["id"] for j in json.loads(listed.stdout)] == sorted([mine, *failed, *old])[::-1]
    assert "globex" not in listed.stdout

    table = run_cli(env, "jobs", "list", "--status", "failed", "--stage", "effect", "--since", "1h")
    lines = table.stdout.splitlines()
    assert table.returncode == 0 and len(lines) == 3, table.stdout  # a header and two jobs
    assert all("upstream down" in line and "acme" in line for line in lines[1:])
    recent = run_cli(env, "jobs", "list", "--tenant", "acme", "--since", "1d", "--json").stdout
    assert old[0] not in [j["id"] for j in json.loads(recent)]

    leaked = run_cli(env, "jobs", "show", str(theirs), "--tenant", "acme")
    assert leaked.returncode == 1
    assert leaked.stderr.strip() == f"pipeline: no job {theirs}" and leaked.stdout == ""
    for verb in ("retry", "cancel"):
        refused = run_cli(env, "jobs", verb, str(theirs), "--tenant", "acme")
        assert (refused.returncode, refused.stderr.strip()) == (1, f"pipeline: no job {theirs}")
    assert statuses(conn, [theirs]) == {"queued"}

    shown = run_cli(env, "jobs", "show", str(mine), "--tenant", "acme")
    job = json.loads(shown.stdout)
    assert (job["payload"], job["tenant_id"], job["status"], job["run_id"]) == (
        {"n": 7},
        "acme",
        "queued",
        mine,
    )
    assert (job["parent_id"], job["children"], job["attempts"], job["claims"]) == (None, [], 0, 0)
    assert set(job["timeline"]) == {"created_at", "run_after", "started_at", "finished_at"}


def test_bulk_retry_and_bulk_cancel_change_only_what_they_match(
    env: dict[str, str], conn: Conn
) -> None:
    acme_failed = insert(conn, 7, "effect", "acme", "failed")
    globex_failed = insert(conn, 2, "effect", "globex", "failed")
    noop_failed = insert(conn, 2, "noop", "acme", "failed")

    retried = run_cli(
        env, "jobs", "retry", "--failed", "--stage", "effect", "--tenant", "acme", "--batch", "3"
    )
    assert retried.returncode == 0, retried.stderr
    assert retried.stdout.strip() == "queued again 7 failed jobs"
    assert statuses(conn, acme_failed) == {"queued"}
    assert statuses(conn, globex_failed + noop_failed) == {"failed"}

    untenanted = insert(conn, 3, "effect", None, "queued")
    cancelled = run_cli(
        env, "jobs", "cancel", "--queued", "--stage", "effect", "--tenant", "acme", "--batch", "2"
    )
    assert cancelled.stdout.strip() == "cancelled 7 queued jobs", cancelled.stderr
    assert statuses(conn, acme_failed) == {"cancelled"}
    assert statuses(conn, untenanted) == {"queued"}
    everyone = run_cli(env, "jobs", "cancel", "--queued", "--stage", "effect", "--reason", "drop")
    assert everyone.stdout.strip() == "cancelled 3 queued jobs"
    assert (
        one(conn, "SELECT DISTINCT last_error FROM pipeline.jobs WHERE id = ANY(%s)", untenanted)
        == "drop"
    )


def test_a_running_job_is_cancelled_by_id_and_its_worker_stops_it(
    env: dict[str, str], conn: Conn, start_worker: Callable[..., WorkerProcess]
) -> None:
    worker = start_worker("--stage", "waiter", "--concurrency", "1", "--retention", "7d")
    long = int(run_cli(env, "enqueue", "waiter", '{"seconds": 600, "mark": "long"}').stdout)
    wait_for(lambda: statuses(conn, [long]) == {"running"}, what="the worker to start the job")

    bulk = run_cli(env, "jobs", "cancel", "--queued", "--stage", "waiter")
    assert bulk.stdout.strip() == "cancelled 0 queued jobs", "never a running job in bulk"
    assert statuses(conn, [long]) == {"running"}

    by_id = run_cli(env, "jobs", "cancel", str(long), "--reason", "operator")
    assert by_id.returncode == 0 and by_id.stdout.strip() == f"job {long} cancelled"
    # The only slot is free again only if the worker stopped the cancelled job.
    nxt = int(run_cli(env, "enqueue", "waiter", '{"seconds": 0, "mark": "next"}').stdout)
    wait_for(
        lambda: one(conn, "SELECT count(*) FROM effects WHERE job_id = %s", nxt) == 1,
        what="the next job to run in the freed slot",
    )
    assert one(conn, "SELECT count(*) FROM effects WHERE job_id = %s", long) == 0
    assert statuses(conn, [long]) == {"cancelled"}
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0


def test_prune_deletes_old_finished_runs_and_keeps_live_and_recent_ones(
    env: dict[str, str], conn: Conn
) -> None:
    old = insert(conn, 5, "noop", "acme", "done") + insert(conn, 1, "noop", None, "failed")
    recent = insert(conn, 2, "noop", "acme", "done")
    queued = insert(conn, 1, "noop", "acme", "queued")
    make_past_days(conn, 9)
    conn.execute(
        "UPDATE pipeline.job_history SET finished_at = now() - interval '8 days', "
        "created_at = now() - interval '8 days' WHERE id = ANY(%s)",
        (old,),
    )
    conn.execute(
        "UPDATE pipeline.active_jobs SET finished_at = now() - interval '8 days', "
        "created_at = now() - interval '8 days' WHERE id = ANY(%s)",
        (queued,),
    )
    conn.execute(
        "INSERT INTO pipeline.outputs (root_id, stage, job_id, attempt, output) "
        "SELECT id, 'noop', id, 1, '{}' FROM pipeline.jobs WHERE id = ANY(%s)",
        (old + recent,),
    )

    kept_failed = run_cli(env, "prune", "--older-than", "7d", "--keep-failed", "--batch", "2")
    assert kept_failed.returncode == 0, kept_failed.stderr
    # The day 8 days back held the jobs, the day before it none.
    assert kept_failed.stdout.startswith(
        "deleted 5 finished jobs, 5 outputs and 0 joins (1 day of history dropped whole, 1 of"
        " its rows kept for runs still going; 1 empty day dropped; 0 runs deleted one by one in"
        " 1 batch);"
    )
    # A rest is 0 to 100 times a batch's time.
    for rest in ("-1", "101", "nan", "x"):
        refused = run_cli(env, "prune", "--older-than", "7d", "--rest", rest)
        assert refused.returncode == 2 and "--rest" in refused.stderr, refused.stderr
    # A sweep's budget it does not reach changes nothing, nor does running at full speed.
    pruned = run_cli(env, "prune", "--older-than", "7d", "--sweep-for", "10m", "--rest", "0")
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout.startswith(
        "deleted 1 finished job, 1 output and 0 joins (0 days of history dropped whole, 0 of"
        " their rows kept for runs still going; 1 run deleted one by one in 1 batch);"
        " deleted 0 blobs no run references"
    )
    remaining = conn.execute("SELECT id FROM pipeline.jobs ORDER BY id").fetchall()
    assert [r[0] for r in remaining] == sorted(recent + queued)
    assert one(conn, "SELECT count(*) FROM pipeline.outputs") == 2
    # Nothing finished is left past the cutoff: no batch ran, and none is claimed.
    again = run_cli(env, "prune", "--older-than", "7d")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(
        "deleted 0 finished jobs, 0 outputs and 0 joins (0 days of history dropped whole, 0 of"
        " their rows kept for runs still going; no run left to delete one by one);"
    )


def written_ago(store: LocalBlobStore, key: str, seconds: float) -> None:
    """Date a local blob's last write `seconds` back, as the sweep's grace period reads it."""
    then = time.time() - seconds
    os.utime(store.path_for(key), (then, then))


def test_prune_deletes_the_blobs_no_remaining_run_references_and_says_what_failed(
    env: dict[str, str], conn: Conn, tmp_path: Path
) -> None:
    store = LocalBlobStore(Path(env["PIPELINE_HOME"]) / "blobs")  # the default store
    old_blob, new_blob = store.put_bytes(b"long ago"), store.put_bytes(b"just now")
    written_ago(store, old_blob, 4000)  # an hour and more
    make_past_days(conn, 9)
    for key in (old_blob, new_blob):
        job = enqueue(conn, "blob_note", {"blob_key": key})
        finish(conn, job, ago="8 days")
    down = {
        **env,
        **DUMMY_AWS_ENV,
        "PIPELINE_BLOB_URL": "s3://down",
        "PIPELINE_S3_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
    }

    failed = run_cli(down, "prune", "--older-than", "7d")

    assert failed.returncode == 0, failed.stderr
    assert failed.stdout.startswith("deleted 2 finished jobs"), "the runs go all the same"
    assert "deleted 0 blobs no run references" in failed.stdout
    assert "failed, kept for the next pass, the rest left for the next pass" in failed.stdout
    warning = "\nwarning: blob sweep: S3 bucket s3://down at http://127.0.0.1"
    assert warning in f"\n{failed.stderr}"  # after botocore's log lines, if any
    assert one(conn, "SELECT count(*) FROM pipeline.blob_garbage") == 2

    swept = run_cli(env, "prune", "--older-than", "7d")

    assert swept.returncode == 0 and swept.stderr == ""
    assert "deleted 1 blob no run references (kept 0 another run references and 1 put" in (
        swept.stdout
    )
    assert not store.exists(old_blob) and store.exists(new_blob)
    # Past a grace of one second by the clock, not by how long the commands above took.
    written_ago(store, new_blob, 10)
    assert run_cli(env, "prune", "--older-than", "7d", "--blob-grace", "1s").returncode == 0
    assert not store.exists(new_blob)
    assert one(conn, "SELECT count(*) FROM pipeline.blob_garbage") == 0


def test_prune_where_blob_url_is_not_the_workers_keeps_the_candidates_for_the_right_store(
    env: dict[str, str], conn: Conn, tmp_path: Path
) -> None:
    """A prune run where PIPELINE_BLOB_URL is unset (a cron host: the default directory, which
    holds nothing) finds every candidate missing: it must not forget them, or their blobs stay
    in the workers' store for ever."""
    workers = LocalBlobStore(tmp_path / "the workers' blobs")
    key = workers.put_bytes(b"put by a worker's submitter")
    written_ago(workers, key, 10)  # past the prunes' grace of one second
    make_past_days(conn, 9)
    finish(conn, enqueue(conn, "blob_note", {"blob_key": key}), ago="8 days")

    unset = run_cli(env, "prune", "--older-than", "7d", "--blob-grace", "1s")

    assert unset.returncode == 0, unset.stderr
    assert unset.stdout.startswith("deleted 1 finished job,"), "the run goes all the same"
    assert "0 were not in the store" in unset.stdout
    assert "warning: blob sweep: local directory" in unset.stderr
    assert "holds no blobs at all" in unset.stderr and "PIPELINE_BLOB_URL" in unset.stderr
    assert one(conn, "SELECT count(*) FROM pipeline.blob_garbage") == 1
    assert workers.exists(key)

    right = {**env, "PIPELINE_BLOB_URL": str(workers.root)}
    swept = run_cli(right, "prune", "--older-than", "7d", "--blob-grace", "1s")

    assert swept.returncode == 0 and swept.stderr == ""
    assert "deleted 1 blob no run references" in swept.stdout
    assert not workers.exists(key)
    assert one(conn, "SELECT count(*) FROM pipeline.blob_garbage") == 0


# -- bad input: one line, exit 2, and the jobs as they were ----------------------------------------

# The rest of the cases, without a database: tests/unit/pipeline/commands/test_admin_input.py
BAD_INPUT = [
    (["jobs", "list", "--since", "5x"], "not a duration"),
    (["jobs", "list", "--limit", "0"], "1..10000"),
    (["jobs", "list", "--status", "stuck"], "invalid choice"),
    (["jobs", "retry", "5", "--failed"], "not both"),
    (["jobs", "cancel", "--queued"], "--queued needs --stage"),
    (["prune", "--older-than", "7"], "not a duration"),
    (["prune", "--older-than", "0d"], "more than 0"),
    (["worker", "--retention", "soon"], "not a duration"),
]


@pytest.mark.parametrize(("args", "reason"), BAD_INPUT, ids=lambda v: repr(v)[:50])
def test_bad_input_is_one_line_exit_2_and_changes_nothing(
    env: dict[str, str], conn: Conn, args: list[str], reason: str
) -> None:
    insert(conn, 2, "noop", "acme", "failed")
    insert(conn, 2, "noop", "acme", "queued")
    make_past_days(conn, 9)
    conn.execute(
        "UPDATE pipeline.job_history SET finished_at = now() - interval '8 days' "
        "WHERE status = 'failed'"
    )
    snapshot = "SELECT id, status, max_attempts, finished_at FROM pipeline.jobs ORDER BY id"
    before = conn.execute(snapshot).fetchall()

    result = run_cli(env, *args)

    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0], result.stderr
    assert conn.execute(snapshot).fetchall() == before


def test_jobs_logs_prints_each_attempts_lines_and_show_lists_the_attempts(
    env: dict[str, str], conn: Conn, start_worker: Callable[..., WorkerProcess]
) -> None:
    worker = start_worker("--stage", "talkative", "--concurrency", "1")
    job_id = int(run_cli(env, "enqueue", "talkative", '{"fail_times": 1}').stdout)
    wait_for(lambda: statuses(conn, [job_id]) == {"done"}, what="the job to succeed")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0

    logs = run_cli(env, "jobs", "logs", str(job_id))
    assert logs.returncode == 0, logs.stderr
    first, second = logs.stdout.split("-- attempt ")[1:]
    assert first.startswith("1 (claim 1), retried") and "attempt 1 line 1" in first
    assert second.startswith("2 (claim 2), done") and "attempt 2 line 0" in second
    assert "INFO tests.talkative:" in second

    shown = json.loads(run_cli(env, "jobs", "show", str(job_id)).stdout)
    assert shown["last_error"] is None
    assert [(a["attempt"], a["outcome"]) for a in shown["attempt_history"]] == [
        (1, "retried"),
        (2, "done"),
    ]
    assert "upstream down on attempt 1" in shown["attempt_history"][0]["error"]

    missing = run_cli(env, "jobs", "logs", "999999")
    assert missing.returncode != 0 and "no job 999999" in missing.stderr
