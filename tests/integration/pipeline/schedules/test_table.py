"""The schedules table against real Postgres, beside the other work that takes turns through
advisory locks."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import ScheduleRegistry, schedule, sync_schedules
from pg_pipeline.maintenance.retention import prune
from pg_pipeline.queries import Q
from tests.support.history import finish, make_past_days

Conn = psycopg.Connection[Any]


@contextlib.contextmanager
def held(db_url: str, lock: str) -> Iterator[None]:
    """The named advisory lock query, held by a transaction of its own until the exit."""
    with psycopg.connect(db_url) as holder:  # not autocommit: the lock lasts until rollback
        holder.execute(Q[lock])
        yield
        holder.rollback()


@pytest.fixture
def impatient(db_url: str) -> Iterator[Conn]:
    """A connection whose every wait for a lock ends in an error after two seconds, rather than
    in a hung test."""
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute("SET lock_timeout = '2s'")
        yield c


def test_a_schedule_sync_does_not_wait_for_a_prune_batch(db_url: str, impatient: Conn) -> None:
    declared = ScheduleRegistry()
    schedule("nightly-effect", stage="effect", every=3600, payload={"n": 1}, registry=declared)

    with held(db_url, "prune_lock"):
        synced = sync_schedules(impatient, declared)

    assert synced.upserted == ["nightly-effect"]
    rows = impatient.execute("SELECT name, stage FROM pipeline.schedules").fetchall()
    assert rows == [("nightly-effect", "effect")]


def test_a_prune_batch_does_not_wait_for_a_schedule_sync(db_url: str, impatient: Conn) -> None:
    # A job finished two hours ago, past the prune's cutoff: a pass whose walk meets no row
    # runs no batch.
    make_past_days(impatient, 1)
    [(old,)] = impatient.execute(
        "INSERT INTO pipeline.active_jobs (type, status) VALUES ('noop', 'running') RETURNING id"
    ).fetchall()
    finish(impatient, old, ago="2 hours")

    with held(db_url, "schedule_sync_lock"):
        report = prune(impatient, 3600)

    assert (report.batches, report.jobs) == (1, 1)
