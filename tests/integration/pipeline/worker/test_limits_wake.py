"""A worker whose claims a rate limit holds back sleeps until the window lets more in, instead
of claiming in a loop or waiting for its poll (docs/limits.md); and corrects its jobs' charges
by what they reported."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

import tests.support.apps.limits_app  # noqa: F401  registers the test stages
from pg_pipeline import JobRequest, WorkerSettings, enqueue_many
from pg_pipeline.admin.limits import limit_rows, set_limit
from pg_pipeline.store import JobStore
from tests.integration.workers import running_worker
from tests.support.apps.limits_app import UNITS

Conn = psycopg.Connection[Any]


def await_condition(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def done(conn: Conn) -> int:
    row = conn.execute("SELECT count(*) FROM pipeline.jobs WHERE status = 'done'").fetchone()
    return int(row[0]) if row else 0


def test_a_blocked_worker_wakes_when_the_window_allows(
    db_url: str, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_limit(conn, UNITS, 3, per=1)
    enqueue_many(conn, [JobRequest("limited", {"n": i}) for i in range(12)])
    # A poll far longer than the test: only the wake at the window can claim in time.
    settings = WorkerSettings(concurrency=4, poll_interval_s=60)
    claims = [0]
    claim = JobStore.claim

    def counted(*args: Any, **kwargs: Any) -> Any:
        claims[0] += 1
        return claim(*args, **kwargs)

    monkeypatch.setattr(JobStore, "claim", counted)
    with running_worker(db_url, ["limited"], settings):
        await_condition(lambda: done(conn) == 12, 15, "the windows never let the jobs in")
    starts = Counter(
        s
        for (s,) in conn.execute(
            "SELECT floor(extract(epoch FROM started_at))::bigint FROM pipeline.jobs"
        ).fetchall()
    )
    assert max(starts.values()) <= 3, starts
    assert len(starts) >= 4, starts
    # Four windows: a claim for each, one per settled batch at most, and a few that found the
    # window not moved yet; a loop would make thousands.
    assert claims[0] <= 40, claims[0]
    print(f"12 jobs at 3/s: {claims[0]} claims over {len(starts)} seconds")


def test_a_run_corrects_its_charge_by_what_it_reported(db_url: str, conn: Conn) -> None:
    set_limit(conn, UNITS, 100, per=60)
    enqueue_many(
        conn,
        [
            JobRequest("limited", {"units": 10, "used": 3}),
            JobRequest("limited", {"units": 10, "used": 25.5}),
            JobRequest("limited", {"units": 10}),  # reports nothing: the estimate stands
        ],
    )
    with running_worker(db_url, ["limited"], WorkerSettings(concurrency=2)):
        await_condition(lambda: done(conn) == 3, 15, "the jobs did not run")
    (row,) = [r for r in limit_rows(conn) if r.key == "k"]
    assert row.used == 3 + 26 + 10


def test_a_run_in_a_child_process_corrects_its_charge_too(db_url: str, conn: Conn) -> None:
    set_limit(conn, UNITS, 100, per=60)
    enqueue_many(
        conn,
        [
            JobRequest("limited_alone", {"units": 10, "used": 40}),
            JobRequest("limited_alone", {"units": 10, "key": "other"}),  # the estimate stands
        ],
    )
    with running_worker(db_url, ["limited_alone"], WorkerSettings(concurrency=2)):
        await_condition(lambda: done(conn) == 2, 30, "the jobs did not run")
    assert {r.key: r.used for r in limit_rows(conn) if r.key != "*"} == {"k": 40, "other": 10}
