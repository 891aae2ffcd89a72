"""`pipeline runs rerun` and `pipeline runs diff` as an operator types them: a run finished at
one version of a stage, a worker started at the next, the run rerun from that stage, and the two
versions of its outputs compared."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from typing import Any

import psycopg

import tests.support.apps.versions_app  # noqa: F401  registers vread and vextract
from pg_pipeline.enqueue import enqueue
from pg_pipeline.runs import run_status
from pg_pipeline.stage import REGISTRY
from pg_pipeline.testing import drain
from tests.acceptance.cli import WorkerProcess, run_cli
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
APP = "tests.support.apps.versions_app"


def test_rerun_a_finished_run_from_a_stage_at_a_new_version_and_diff_the_outputs(
    env: dict[str, str], conn: Conn, db_url: str, start_worker: Callable[..., WorkerProcess]
) -> None:
    run_id = enqueue(conn, "vread", {"text": " ACME:12.50 "}, tenant_id="acme")
    assert drain(db_url, stages=["vread", "vextract"], run_id=run_id).ok  # at version "1"
    env = {**env, "PIPELINE_APP": APP}

    # A stage the code does not know is a typo (exit 2).
    typo = run_cli(env, "runs", "rerun", str(run_id), "--from", "vextrct", "--app", APP)
    assert typo.returncode == 2 and "unknown stage 'vextrct'" in typo.stderr, typo.stderr
    one = run_cli(env, "runs", "diff", str(run_id), "--stage", "vextract")
    assert one.returncode == 1 and "has one output version only" in one.stderr, one.stderr
    same = run_cli(env, "runs", "rerun", str(run_id), "--from", "vextract", "--app", APP)
    assert same.returncode == 1, same.stdout
    assert "already has outputs of version '1'" in same.stderr and "--force" in same.stderr

    worker = start_worker(environ={**env, "VERSIONS_APP_EXTRACT": "2"})
    wait_for(
        lambda: conn.execute(
            "SELECT 1 FROM pipeline.stages WHERE name = 'vextract' AND code_version = '2'"
        ).fetchone(),
        timeout=30,
        what="the worker recording vextract at version 2",
    )
    other = run_cli(env, "runs", "rerun", str(run_id), "--from", "vextract", "--tenant", "globex")
    assert other.returncode == 1 and f"there is no run {run_id} of tenant" in other.stderr

    made = run_cli(env, "runs", "rerun", str(run_id), "--from", "vextract", "--tenant", "acme")
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == (
        f"run {run_id}: rerun from vextract at version 2 as generation 1: "
        "1 job of the stage enqueued"
    )
    wait_for(
        lambda: run_status(conn, run_id).status == "done",  # type: ignore[union-attr]
        timeout=30,
        what="the rerun to finish",
    )
    again = run_cli(env, "runs", "rerun", str(run_id), "--from", "vextract", "--json")
    assert again.returncode == 0, again.stderr
    shown = json.loads(again.stdout)
    assert (shown["created"], shown["generation"], shown["jobs"]) == (False, 1, 1)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0

    shown = run_cli(env, "runs", "show", str(run_id)).stdout
    assert "  vextract        generation 0 (1), generation 1 (2, rerun from vextract)" in shown
    read_version = REGISTRY.get("vread").code_version
    assert f"  vread           generation 0 ({read_version})\n" in shown  # not rerun
    as_json = json.loads(run_cli(env, "runs", "show", str(run_id), "--json").stdout)
    assert [v["generation"] for v in as_json["output_versions"] if v["stage"] == "vextract"] == [
        0,
        1,
    ]
    diff = run_cli(env, "runs", "diff", str(run_id), "--stage", "vextract")
    assert diff.returncode == 0, diff.stderr
    lines = diff.stdout.splitlines()
    assert lines[0] == f"run {run_id}, stage vextract: generation 0 (1) vs generation 1 (2)"
    assert any(line.startswith("  * total") and "12.0" in line and "12.5" in line for line in lines)
    assert "(2 fields unchanged)" in diff.stdout
    as_json = run_cli(
        env, "runs", "diff", str(run_id), "--stage", "vextract", "--versions", "2,1", "--json"
    )
    assert as_json.returncode == 0, as_json.stderr
    compared = json.loads(as_json.stdout)
    assert (compared["left"]["code_version"], compared["right"]["code_version"]) == ("2", "1")
    [part] = compared["parts"]
    changed = {f["field"]: (f["left"], f["right"]) for f in part["fields"] if f["changed"]}
    assert changed == {"total": (12.5, 12.0)}
    bad = run_cli(env, "runs", "diff", str(run_id), "--stage", "vextract", "--versions", "1,9")
    assert bad.returncode == 2 and "no output version '9'" in bad.stderr
    shape = run_cli(env, "runs", "diff", str(run_id), "--stage", "vextract", "--versions", "1")
    assert shape.returncode == 2 and "give two versions as A,B" in shape.stderr
    [(newest,)] = conn.execute(
        "SELECT max(id) FROM pipeline.jobs WHERE root_id = %s AND type = 'vextract'", (run_id,)
    ).fetchall()
    job = json.loads(run_cli(env, "jobs", "show", str(newest)).stdout)
    assert (job["output"]["generation"], job["output"]["code_version"]) == (1, "2")
