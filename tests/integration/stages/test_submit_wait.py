"""`pipeline submit --wait` ends as soon as the run fails, from the run's stored status."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import pg_pipeline_documents.cli as cli
from pg_pipeline.commands.api import EXIT_FAILURE
from pg_pipeline.store import JobStore
from tests.integration.pipeline.test_run_status import fan_out_root

Conn = psycopg.Connection[Any]


def test_waiting_ends_with_the_failing_job_while_its_siblings_still_run(
    conn: Conn, pool: ConnectionPool, capsys: pytest.CaptureFixture[str]
) -> None:
    store = JobStore(pool)
    root, _ = fan_out_root(conn, store, 3)
    first, *_ = sorted(store.claim(["page"], 10, uuid.UUID(int=5)), key=lambda j: j.id)
    store.fail(first, "page 0 is unreadable")
    # Two pages are still running: the run has not finished, but it can never give fields.
    started = time.monotonic()

    code = cli.wait_for_fields(conn, [(Path("a.pdf"), root)], timeout=60)

    assert code == EXIT_FAILURE
    assert time.monotonic() - started < 10  # not the timeout: it did not wait for the run
    err = capsys.readouterr().err
    assert f"document {root} failed: page: page 0 is unreadable (job {first.id})" in err
