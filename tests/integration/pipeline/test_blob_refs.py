"""Blob references (pipeline.blob_refs): every way of enqueueing a job whose payload names a
blob key records that the job's run references the blob, in the enqueue's own transaction, so
that retention deletes a blob only once no remaining run references it."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import tests.support.apps.blobs_app  # noqa: F401  registers the blob stages
from pg_pipeline import JobRequest, aenqueue, aenqueue_many, enqueue, enqueue_many, enqueue_once
from pg_pipeline.testing import drain

Conn = psycopg.Connection[Any]


def key_of(text: str) -> str:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return f"sha256/{digest[:2]}/{digest}"


A, B, C, D = (key_of(t) for t in "abcd")


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        yield c


def refs(conn: Conn) -> set[tuple[str, int]]:
    return {(k, r) for k, r in conn.execute("SELECT blob_key, run_id FROM pipeline.blob_refs")}


def test_an_enqueue_records_each_blob_its_payload_names_for_its_run(conn: Conn) -> None:
    job = enqueue(conn, "blob_upload", {"blob_key": A, "pages": [B, A]})
    assert refs(conn) == {(A, job), (B, job)}


def test_a_key_inside_a_longer_string_counts_and_look_alikes_do_not(conn: Conn) -> None:
    digest = A.rsplit("/", 1)[1]
    job = enqueue(conn, "blob_note", {"blob_key": f"s3://bucket/prefix/{A}"})
    enqueue(conn, "blob_note", {"blob_key": "sha256/ but no key"})
    enqueue(conn, "blob_note", {"blob_key": f"sha256/{digest[2:4]}/{digest}"})  # wrong prefix
    enqueue(conn, "blob_note", {"blob_key": f"{A}ff"})  # a longer run of hex: no digest
    enqueue(conn, "blob_note", {"blob_key": A.upper()})
    assert refs(conn) == {(A, job)}


def test_a_payload_without_blobs_records_nothing(conn: Conn) -> None:
    enqueue(conn, "blob_note", {"blob_key": "not a key"})
    enqueue_many(conn, [JobRequest("blob_note", {"blob_key": str(n)}) for n in range(3)])
    assert refs(conn) == set()


def test_a_bulk_enqueue_records_each_jobs_run_and_none_for_a_dedup_key_taken(conn: Conn) -> None:
    held = enqueue_once(conn, "blob_note", {"blob_key": C}, dedup_key="taken")[0]
    root = enqueue(conn, "blob_note", {"blob_key": "x"})
    ids = enqueue_many(
        conn,
        [
            JobRequest("blob_note", {"blob_key": A}),
            JobRequest("blob_note", {"blob_key": "none"}),
            JobRequest("blob_note", {"blob_key": B}, root_id=root),
            JobRequest("blob_note", {"blob_key": D}, dedup_key="taken"),  # skipped
            JobRequest("blob_note", {"blob_key": A}, dedup_key="new"),
        ],
    )
    first, _, _, again = ids
    assert refs(conn) == {(C, held), (A, first), (B, root), (A, again)}


@pytest.mark.parametrize("dedup", [False, True], ids=["keyless", "keyed"])
def test_a_bulk_enqueue_gives_each_new_run_the_blobs_of_its_own_payload(
    conn: Conn, dedup: bool
) -> None:
    keys = [key_of(f"page {n}") for n in range(50)]
    ids = enqueue_many(
        conn,
        [
            JobRequest("blob_note", {"blob_key": key}, dedup_key=f"d{n}" if dedup else None)
            for n, key in enumerate(keys)
        ],
    )
    assert refs(conn) == set(zip(keys, ids, strict=True))


def test_a_bulk_enqueue_of_stages_known_by_name_records_them_too(conn: Conn) -> None:
    ids = enqueue_many(
        conn,
        [JobRequest("unrecorded", {"blob_key": A}), JobRequest("unrecorded", {"k": [B, C]})],
        validate=False,
    )
    one = enqueue(conn, "unrecorded", {"blob_key": D}, validate=False)
    assert refs(conn) == {(A, ids[0]), (B, ids[1]), (C, ids[1]), (D, one)}


def test_references_commit_and_roll_back_with_the_callers_transaction(db_url: str) -> None:
    with psycopg.connect(db_url) as conn:  # not autocommit: the caller's transaction
        enqueue(conn, "blob_note", {"blob_key": A})
        enqueue_many(conn, [JobRequest("blob_note", {"blob_key": B})])
        conn.rollback()
        assert refs(conn) == set()
        kept = enqueue(conn, "blob_note", {"blob_key": C})
        conn.commit()
    with psycopg.connect(db_url) as other:
        assert refs(other) == {(C, kept)}


def test_the_async_api_records_the_same_references(db_url: str, conn: Conn) -> None:
    async def add() -> tuple[int, list[int]]:
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as aconn:
            one = await aenqueue(aconn, "blob_note", {"blob_key": A})
            many = await aenqueue_many(aconn, [JobRequest("blob_note", {"blob_key": B})])
            return one, many

    one, many = asyncio.run(add())
    assert refs(conn) == {(A, one), (B, many[0])}


def test_a_stages_follow_ups_fan_out_and_next_stage_reference_blobs_for_the_run(
    db_url: str, conn: Conn
) -> None:
    root = enqueue(
        conn, "blob_upload", {"blob_key": A, "derived": B, "pages": [C, A], "then_key": D}
    )
    assert refs(conn) == {(A, root), (B, root), (C, root), (D, root)}  # the root names them all
    conn.execute("DELETE FROM pipeline.blob_refs")
    drain(db_url, stages=["blob_upload", "blob_note"], run_id=root)
    # Written by the root's completing transaction (follow-up, children, the join's next
    # stage), every one the root's run's.
    assert refs(conn) == {(B, root), (C, root), (A, root), (D, root)}
    [(notes,)] = conn.execute(
        "SELECT count(*) FROM pipeline.jobs WHERE type = 'blob_note' AND root_id = %s", (root,)
    ).fetchall()
    assert notes == 4  # derived, two pages, then


def test_a_stage_references_a_blob_it_names_only_in_its_output(db_url: str, conn: Conn) -> None:
    job = enqueue(conn, "blob_render", {"digest": A.rsplit("/", 1)[1]})
    assert refs(conn) == set(), "the payload names no key"

    drain(db_url, stages=["blob_render"])

    assert refs(conn) == {(A, job)}, "written with the job's completion"
    [(output,)] = conn.execute("SELECT output FROM pipeline.outputs WHERE job_id = %s", (job,))
    assert output == {"blob_key": A}
