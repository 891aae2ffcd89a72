"""Operator commands that only write rows, run where the stages' code is not: they check stage
names and payloads against what a running worker recorded."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import psycopg

from tests.acceptance.cli import WorkerProcess, run_cli
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]


def test_commands_without_app_check_against_what_workers_recorded(
    env: dict[str, str], conn: Conn, start_worker: Callable[..., WorkerProcess]
) -> None:
    # The worker loads tests.support.apps.jobs_app (PIPELINE_APP); the operator does not.
    worker = start_worker("--stage", "capped", "--concurrency", "1")
    wait_for(
        lambda: conn.execute("SELECT 1 FROM pipeline.stages WHERE name = 'capped'").fetchone(),
        timeout=60,
        what=f"the worker's stages recorded; its log: {worker.log()}",
    )
    operator = {**env, "PIPELINE_APP": ""}

    listed = run_cli(operator, "stages", "--json")
    assert listed.returncode == 0, listed.stderr
    (capped,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (capped["name"], capped["live"], capped["tenant_cap"]) == ("capped", True, 3)
    assert capped["input_schema"]["properties"]["n"]["type"] == "integer"
    table = run_cli(operator, "stages").stdout.splitlines()
    assert table[0].split()[:4] == ["stage", "version", "live", "then"]
    assert table[1].split()[:4] == ["capped", capped["version"], "yes", "-"]
    assert capped["code_version"].startswith("code-")
    assert "code version" in table[0] and capped["code_version"] in table[1]

    done = run_cli(operator, "tenants", "set-cap", "acme", "1", "--stage", "capped")
    assert done.returncode == 0, done.stderr
    assert conn.execute("SELECT tenant_id, stage, cap FROM pipeline.tenant_caps").fetchall() == [
        ("acme", "capped", 1)
    ]
    typo = run_cli(operator, "tenants", "set-cap", "acme", "1", "--stage", "caped")
    assert typo.returncode == 2
    (line,) = typo.stderr.strip().splitlines()
    said = (
        "pipeline: unknown stage 'caped'; "
        "registered stages (imported here or recorded by workers): "
    )
    # Installed plugins' stages (the documents app's, today) are listed too.
    assert line.startswith(said) and "capped" in line.removeprefix(said).split(", "), line

    listed = run_cli(operator, "tenants", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    # No jobs yet: the cap alone is listed, with the stage's default cap as the worker recorded it.
    assert [json.loads(line)["default_cap"] for line in listed.stdout.splitlines()] == [3]

    enqueued = run_cli(operator, "enqueue", "capped", '{"n": 2}', "--tenant", "acme")
    assert enqueued.returncode == 0, enqueued.stderr
    again = run_cli(operator, "jobs", "enqueue", "capped", "{}", "--tenant", "acme")
    assert again.returncode == 0, again.stderr
    bad = run_cli(operator, "enqueue", "capped", '{"n": "two"}')
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "pipeline: invalid payload for stage 'capped', as workers recorded it: "
        "field 'n': 'two' is not of type 'integer'"
    ]
    # The worker runs what the operator enqueued.
    wait_for(
        lambda: (
            conn.execute(
                "SELECT count(*) FROM pipeline.jobs WHERE type = 'capped' AND status = 'done'"
            ).fetchone()
            == (2,)
        ),
        timeout=60,
        what="the jobs enqueued without the code done",
    )

    added = run_cli(operator, "schedule", "add", "hourly", "--stage", "capped", "--every", "3600")
    assert added.returncode == 0, added.stderr
    refused = run_cli(
        operator,
        "schedule",
        "add",
        "bad",
        "--stage",
        "capped",
        "--every",
        "60",
        "--payload",
        '{"n": []}',
    )
    assert refused.returncode == 2 and "field 'n'" in refused.stderr, refused.stderr

    # With --app, the code given decides: a module without the stage does not know it.
    coded = run_cli(
        operator,
        "tenants",
        "set-cap",
        "acme",
        "1",
        "--stage",
        "capped",
        "--app",
        "tests.support.apps.logging_app",
    )
    assert coded.returncode == 2 and "unknown stage 'capped'" in coded.stderr, coded.stderr
