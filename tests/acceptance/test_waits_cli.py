"""`pipeline runs waiting` and `pipeline runs signal` as an operator types them."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import psycopg

import tests.support.apps.waits_app  # noqa: F401  registers the wait stages
from pg_pipeline import enqueue
from pg_pipeline.testing import drain
from tests.acceptance.cli import pipeline_exe, run_cli
from tests.support.paths import REPO

Conn = psycopg.Connection[Any]


def test_list_the_open_waits_and_answer_one(env: dict[str, str], conn: Conn, db_url: str) -> None:
    job_id = enqueue(conn, "approve", {"name": "contract.pdf"}, tenant_id="acme")
    assert drain(db_url, stages=["approve"]).waiting == [job_id]

    listed = run_cli(env, "runs", "waiting", "--json")
    assert listed.returncode == 0, listed.stderr
    [task] = json.loads(listed.stdout)
    assert (task["job_id"], task["name"], task["detail"]) == (
        job_id,
        "review",
        {"doc": "contract.pdf"},
    )
    table = run_cli(env, "runs", "waiting", "--tenant", "acme")
    assert "contract.pdf" in table.stdout and "review" in table.stdout
    assert json.loads(run_cli(env, "runs", "waiting", "--tenant", "other", "--json").stdout) == []
    status = run_cli(env, "status")
    assert "waiting for input:" in status.stdout, status.stdout
    assert "runs:" not in status.stdout or "waiting" in status.stdout

    wrong = run_cli(env, "runs", "signal", str(job_id), "review", "--payload", '{"approved": "x"}')
    assert wrong.returncode == 1
    assert "field 'approved': 'x' is not of type 'boolean'" in wrong.stderr
    elsewhere = run_cli(env, "runs", "signal", str(job_id), "approval", "--payload", "{}")
    assert elsewhere.returncode == 1
    assert "is not waiting on 'approval'; it waits on 'review'" in elsewhere.stderr
    assert run_cli(env, "runs", "signal", str(job_id), "review", "--payload", "{").returncode == 2

    answered = subprocess.run(
        [*pipeline_exe(), "runs", "signal", str(job_id), "review", "--payload", "-"],
        env=env,
        cwd=REPO,
        input='{"approved": true, "note": "from stdin"}',
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert answered.returncode == 0, answered.stderr
    assert f"job {job_id} resumed" in answered.stdout
    again = run_cli(env, "runs", "signal", str(job_id), "review", "--payload", '{"approved": true}')
    assert again.returncode == 1 and "already signalled" in again.stderr
    assert drain(db_url, stages=["approve"]).done == [job_id]
    shown = json.loads(run_cli(env, "jobs", "show", str(job_id)).stdout)
    assert shown["wait"]["resolution"] == "signalled"
    assert shown["wait"]["payload"] == {"approved": True, "note": "from stdin"}


def test_a_signal_to_the_wrong_job_says_which_option_names_the_right_one(
    env: dict[str, str], conn: Conn, db_url: str
) -> None:
    run_id = enqueue(conn, "prepare", {"name": "lease.pdf"})
    [review_id] = drain(db_url, stages=["prepare", "approve"]).waiting
    answer = ("--payload", '{"approved": true}')

    inner = run_cli(env, "runs", "signal", str(review_id), "review", *answer)
    assert inner.returncode == 1
    # The operator is told the option to type, not only the Python keyword.
    assert f"signal run {run_id} and say which job" in inner.stderr
    assert f"--job {review_id}" in inner.stderr
    wrong_job = run_cli(env, "runs", "signal", str(run_id), "review", "--job", str(run_id), *answer)
    assert wrong_job.returncode == 1
    assert f"job {run_id} of run {run_id} does not wait on 'review'" in wrong_job.stderr
    assert "it waits on 'review'" not in wrong_job.stderr
    other = run_cli(env, "runs", "signal", str(run_id), "review", "--tenant", "acme", *answer)
    assert other.returncode == 1 and f"no run {run_id} of tenant 'acme'" in other.stderr

    right = run_cli(env, "runs", "signal", str(run_id), "review", "--job", str(review_id), *answer)
    assert right.returncode == 0, right.stderr
    assert f"job {review_id} resumed" in right.stdout
