"""The worker's Outputs reads against a real database: a job's own output (did an earlier run
of this very job commit?) apart from a run's outputs of a stage."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import enqueue
from pg_pipeline.worker.outputs import Outputs

Conn = psycopg.Connection[Any]


def store_output(conn: Conn, root_id: int, job_id: int, part: int | None, output: Any) -> None:
    conn.execute(
        "INSERT INTO pipeline.outputs (root_id, stage, part, job_id, attempt, output) "
        "VALUES (%s, 'page', %s, %s, 1, %s)",
        (root_id, part, job_id, Jsonb(output)),
    )


def test_a_jobs_own_output_is_told_apart_from_its_runs_outputs(
    conn: Conn, pool: ConnectionPool
) -> None:
    root, first, second, unrun = (enqueue(conn, "noop", {"n": n}) for n in range(4))
    store_output(conn, root, first, 2, {"text": "two"})
    store_output(conn, root, second, 1, {"text": "one"})
    outputs = Outputs(pool, halt=threading.Event(), retry_max_s=0.5)
    assert outputs.job_output(first) == {"text": "two"}
    assert outputs.job_output(unrun) is None
    assert outputs.run_outputs(root, "page") == [(1, {"text": "one"}), (2, {"text": "two"})]
    assert outputs.run_outputs(root, "extract") == []
