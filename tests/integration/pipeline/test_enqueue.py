"""What the queue cannot take is refused at enqueue, naming the limit, on every path that adds a
job: a payload over the payload limit (a claim holds a batch of payloads in memory at once),
a tenant id or dedup key too long to be a key of the queue's indexes (PostgreSQL would refuse
it inside the caller's transaction, or a stage's completing one, with a message that names no
field)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import (
    InvalidSchedule,
    JobRequest,
    PayloadTooLarge,
    Schedule,
    WorkerSettings,
    enqueue,
    enqueue_many,
    enqueue_once,
)
from pg_pipeline.validation import InvalidJob
from tests.integration.workers import running_worker
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
FAST = WorkerSettings(concurrency=2, poll_interval_s=0.1, reclaim_interval_s=0.5, grace_period_s=2)
BIG = {"mode": "x" * 300_000}  # over the default 256 KiB


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(EFFECTS_DDL)
        yield c


def jobs(conn: Conn) -> int:
    row = conn.execute("SELECT count(*) FROM pipeline.jobs").fetchone()
    assert row is not None
    return int(row[0])


ENQUEUES: dict[str, Callable[..., Any]] = {
    "enqueue": lambda c, payload, **kw: enqueue(c, "hostile", payload, **kw),
    "enqueue_once": lambda c, payload, **kw: enqueue_once(
        c, "hostile", payload, **{"dedup_key": "k", **kw}
    ),
    "enqueue_many": lambda c, payload, **kw: enqueue_many(
        c, [JobRequest("hostile", {"mode": "fine"}), JobRequest("hostile", payload, **kw)]
    ),
}


@pytest.mark.parametrize("add", ENQUEUES.values(), ids=ENQUEUES.keys())
def test_every_enqueue_refuses_a_payload_over_the_limit_and_says_where_large_data_goes(
    conn: Conn, add: Callable[..., Any]
) -> None:
    with pytest.raises(PayloadTooLarge) as refused:
        add(conn, BIG)
    message = str(refused.value)
    size = len(json.dumps(BIG, separators=(",", ":")))
    assert f"{size:,} bytes of JSON, over the limit of 262,144" in message
    assert "PIPELINE_MAX_PAYLOAD_BYTES" in message and "blob storage" in message
    assert jobs(conn) == 0


@pytest.mark.parametrize("add", ENQUEUES.values(), ids=ENQUEUES.keys())
def test_every_enqueue_refuses_tenant_ids_and_dedup_keys_too_long_to_index(
    conn: Conn, add: Callable[..., Any]
) -> None:
    # Random, so that no compression would let PostgreSQL take them.
    long = secrets.token_hex(1500)
    with pytest.raises(InvalidJob, match=r"tenant_id is 3,000 bytes long .* at most 512 "):
        add(conn, {"mode": "a"}, tenant_id=long)
    with pytest.raises(InvalidJob, match=r"dedup_key is 3,000 bytes long .* at most 1,024 "):
        add(conn, {"mode": "a"}, dedup_key=long)
    # Counted in bytes: 513 characters of two bytes each are over 1,024.
    with pytest.raises(InvalidJob, match="dedup_key is 1,026 bytes long"):
        add(conn, {"mode": "a"}, dedup_key="\u00e9" * 513)
    assert jobs(conn) == 0


def test_keys_at_the_limits_fit_the_indexes(conn: Conn) -> None:
    job = enqueue(
        conn,
        "hostile",
        {"mode": "x" * (256 * 1024 - 20)},
        tenant_id=secrets.token_hex(256),
        dedup_key=secrets.token_hex(512),
    )
    row = conn.execute(
        "SELECT octet_length(tenant_id), octet_length(dedup_key) FROM pipeline.jobs WHERE id = %s",
        (job,),
    ).fetchone()
    assert row == (512, 1024)


FOLLOW_UPS = {
    "long_dedup_key": "dedup_key is 3,000 bytes long (UTF-8); at most 1,024 are allowed",
    "long_tenant": "tenant_id is 3,000 bytes long (UTF-8); at most 512 are allowed",
    "big_follow_up": "bytes of JSON, over the limit of 262,144",
    "big_fan_out": "bytes of JSON, over the limit of 262,144",
}


def test_a_follow_up_the_queue_cannot_take_fails_its_job_at_once_and_the_worker_goes_on(
    db_url: str, conn: Conn
) -> None:
    bad = {enqueue(conn, "hostile", {"mode": mode}): reason for mode, reason in FOLLOW_UPS.items()}

    def settled() -> list[tuple[int, str, int, str]]:
        return conn.execute(
            "SELECT id, status, attempts, last_error FROM pipeline.jobs WHERE id = ANY(%s) "
            "AND status IN ('done', 'failed') ORDER BY id",
            (list(bad),),
        ).fetchall()

    with running_worker(db_url, ["hostile", "effect"], FAST):
        ended = wait_for(lambda: len(settled()) == len(bad) and settled(), what="every job to end")
        good = enqueue(conn, "effect", {"n": 1})
        wait_for(
            lambda: (
                conn.execute("SELECT status FROM pipeline.jobs WHERE id = %s", (good,)).fetchone()
                == ("done",)
            ),
            what="the next job to be done",
        )
    # Refused at the call, so failed on the first attempt (permanent, no retry), with why.
    assert [(job, status, attempts) for job, status, attempts, _ in ended] == [
        (job, "failed", 1) for job in bad
    ]
    for job, _, _, error in ended:
        assert bad[job] in error
    assert jobs(conn) == len(bad) + 1  # no follow-up exists


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"payload": BIG}, "over the limit of 262,144"),
        ({"tenant_id": "t" * 600}, "tenant_id is 600 bytes long"),
    ],
)
def test_a_schedule_refuses_what_each_of_its_fires_would_be_refused(
    kwargs: dict[str, Any], reason: str
) -> None:
    with pytest.raises(InvalidSchedule, match=reason):
        Schedule.define("nightly", stage="hostile", every=60, **kwargs)
