"""Retention deletes the blobs no remaining run references: a run's references go with it, and
the sweep after a prune deletes each blob whose last reference went, unless a run references it
again or it was stored or put again within the grace period. Against a local directory and S3
(moto's server over HTTP)."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.blobs_app  # noqa: F401  registers the blob stages
from pg_pipeline import enqueue
from pg_pipeline.blobs import (
    BlobStore,
    BlobStoreUnavailable,
    Deletion,
    LocalBlobStore,
    S3BlobStore,
)
from pg_pipeline.maintenance.blob_sweep import BLOB_SWEEP_BATCH, SweepReport, sweep_blobs, swept
from pg_pipeline.maintenance.retention import Pruner, pass_params, prune, said
from pg_pipeline.queries import Q
from tests.integration.pipeline.maintenance.test_retention import STRADDLING
from tests.integration.pipeline.test_blobs import free_port, make_s3_store
from tests.support.history import finish, make_past_days

Conn = psycopg.Connection[Any]
DAY = 86_400.0
WEEK = 7 * DAY


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        make_past_days(c, 30)
        yield c


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "local":
        return LocalBlobStore(tmp_path / "blobs")
    endpoint_url = request.getfixturevalue("moto_s3_endpoint")
    return make_s3_store(endpoint_url, request.getfixturevalue("s3_bucket"))


def run_naming(conn: Conn, key: str, *, days: float, status: str = "done") -> int:
    """A run of one job whose payload names `key`, finished `days` ago."""
    job = enqueue(conn, "blob_note", {"blob_key": key})
    finish(conn, job, status, ago=f"{days} days")
    return job


def candidates(conn: Conn) -> list[str]:
    return [k for (k,) in conn.execute("SELECT blob_key FROM pipeline.blob_garbage ORDER BY 1")]


def sweep(conn: Conn, store: BlobStore, grace_s: float = 0.0) -> SweepReport:
    return sweep_blobs(conn, lambda: store, grace_s=grace_s)


def test_a_blob_shared_by_two_runs_stays_until_the_last_one_goes(
    conn: Conn, store: BlobStore
) -> None:
    shared = store.put_bytes(b"the same upload, twice")
    alone = store.put_bytes(b"another document")
    first = run_naming(conn, shared, days=10)  # its day goes whole
    run_naming(conn, alone, days=10)
    second = run_naming(conn, shared, days=1)

    report = prune(conn, WEEK)
    assert (report.jobs, report.runs) == (2, 0), "deleted with their day, not run by run"
    blobs = sweep(conn, store)
    assert (blobs.deleted, blobs.referenced) == (1, 1)
    assert not store.exists(alone)
    assert store.exists(shared), f"run {second} still references it"
    assert candidates(conn) == []

    conn.execute(
        f"UPDATE pipeline.job_history SET finished_at = {STRADDLING} WHERE id = %s", (second,)
    )  # the day that holds the cutoff, at any time of day: pruned run by run
    assert prune(conn, WEEK).runs == 1
    assert sweep(conn, store) == SweepReport(deleted=1)
    assert not store.exists(shared)
    assert first not in {r for (r,) in conn.execute("SELECT run_id FROM pipeline.blob_refs")}
    assert conn.execute("SELECT count(*) FROM pipeline.blob_refs").fetchone() == (0,)


def test_a_prune_batch_drops_the_references_of_the_runs_it_deletes_and_of_no_other(
    conn: Conn,
) -> None:
    pruned, grew = ("sha256/ab/ab" + digit * 62 for digit in "01")
    runs = [run_naming(conn, key, days=1) for key in (pruned, grew)]
    conn.execute(
        f"UPDATE pipeline.job_history SET finished_at = {STRADDLING} WHERE id = ANY(%s)", (runs,)
    )  # the day that holds the cutoff: pruned run by run
    [(cutoff,)] = conn.execute(Q["prune_cutoff"], {"older_than_s": WEEK}).fetchall()
    batch = pass_params(conn, cutoff, keep_failed=False) | {"runs": runs}

    # The second run has a job fewer than the batch locked (one came or went since): it stays,
    # with its references.
    [(jobs, *_)] = conn.execute(Q["prune_runs"], batch | {"locked": [1, 2]}).fetchall()

    assert jobs == 1
    assert conn.execute("SELECT blob_key, run_id FROM pipeline.blob_refs").fetchall() == [
        (grew, runs[1])
    ]
    assert candidates(conn) == [pruned]


def test_keep_failed_keeps_the_blobs_of_the_runs_it_keeps(conn: Conn, store: BlobStore) -> None:
    failed = store.put_bytes(b"a document that failed")
    done = store.put_bytes(b"a document that went through")
    run_naming(conn, failed, days=10, status="failed")
    run_naming(conn, done, days=10)

    prune(conn, WEEK, keep_failed=True)

    assert sweep(conn, store) == SweepReport(deleted=1)
    assert store.exists(failed) and not store.exists(done)


def test_a_blob_put_again_within_the_grace_period_stays_and_a_new_run_takes_it_back(
    conn: Conn, store: BlobStore
) -> None:
    key = store.put_bytes(b"uploaded, pruned, uploaded again")
    run_naming(conn, key, days=10)
    prune(conn, WEEK)
    assert candidates(conn) == [key]

    # The same bytes stored again (the put finds them there and refreshes their time) for a job
    # not enqueued yet: the sweep leaves the blob for the grace period, and its candidate row.
    assert store.put_file(io.BytesIO(b"uploaded, pruned, uploaded again")) == key
    assert sweep(conn, store, grace_s=3600) == SweepReport(recent=1)
    assert store.exists(key) and candidates(conn) == [key]

    # The job commits: its run references the blob, which is no candidate any more.
    job = enqueue(conn, "blob_note", {"blob_key": key})
    assert sweep(conn, store) == SweepReport(referenced=1)
    assert store.exists(key) and candidates(conn) == []
    assert conn.execute("SELECT run_id FROM pipeline.blob_refs").fetchall() == [(job,)]


def test_the_sweep_counts_a_blob_its_store_does_not_hold_and_drops_it(
    conn: Conn, store: BlobStore, tmp_path: Path
) -> None:
    key = store.put_bytes(b"in the store the submitter used")
    run_naming(conn, key, days=10)
    prune(conn, WEEK)
    elsewhere = LocalBlobStore(tmp_path / "another store")
    elsewhere.put_bytes(b"a blob of its own: a store, but not that blob's")

    assert sweep(conn, elsewhere) == SweepReport(missing=1)
    assert store.exists(key), "the sweep deletes from its own store only"
    assert candidates(conn) == []


@pytest.mark.parametrize("wrong", ["no directory", "no bucket", "another prefix"])
def test_a_sweep_given_a_store_that_holds_no_blobs_forgets_no_candidate(
    conn: Conn, store: BlobStore, tmp_path: Path, wrong: str, request: pytest.FixtureRequest
) -> None:
    """PIPELINE_BLOB_URL unset or mistyped where the prune runs: every candidate is missing
    from that store. Dropping them would keep their blobs in the workers' store for ever."""
    keys = [store.put_bytes(f"document {n}".encode()) for n in range(2)]
    for key in keys:
        run_naming(conn, key, days=10)
    prune(conn, WEEK)
    if wrong == "no directory":
        elsewhere: BlobStore = LocalBlobStore(tmp_path / "unset where the prune runs")
    else:
        endpoint_url = request.getfixturevalue("moto_s3_endpoint")
        bucket = request.getfixturevalue("s3_bucket")
        elsewhere = make_s3_store(
            endpoint_url, f"{bucket}-typo" if wrong == "no bucket" else bucket, prefix="other"
        )

    blobs = sweep(conn, elsewhere)

    assert (blobs.deleted, blobs.missing, blobs.left) == (0, 0, True) and blobs.failed >= 1
    assert blobs.error is not None and "holds no blobs" in blobs.error
    assert "PIPELINE_BLOB_URL" in swept(blobs)
    assert candidates(conn) == sorted(keys)
    assert sweep(conn, store) == SweepReport(deleted=2)
    assert candidates(conn) == []


def test_an_unreachable_store_fails_the_sweep_not_the_prune_and_the_next_sweep_deletes(
    conn: Conn, store: BlobStore, aws_test_env: None
) -> None:
    keys = [store.put_bytes(f"document {n}".encode()) for n in range(3)]
    for key in keys:
        run_naming(conn, key, days=10)
    down = S3BlobStore(
        "down", endpoint_url=f"http://127.0.0.1:{free_port()}", max_attempts=1, connect_timeout=1
    )

    report = prune(conn, WEEK)
    blobs = sweep(conn, down)

    assert report.jobs == 3, "the runs are pruned all the same"
    # Stopped at the first failure: the requests already in flight (8 at once) fail too.
    assert (blobs.deleted, blobs.left) == (0, True) and 1 <= blobs.failed <= 3
    assert blobs.error is not None and "S3 bucket s3://down at http://127.0.0.1" in blobs.error
    assert "unreachable" in blobs.error
    text = swept(blobs)
    assert f"{blobs.failed} failed, kept for the next pass, the rest left for the next pass" in text
    assert candidates(conn) == sorted(keys)
    assert all(store.exists(key) for key in keys)

    assert sweep(conn, store) == SweepReport(deleted=3)
    assert candidates(conn) == [] and not any(store.exists(key) for key in keys)


def test_a_store_that_cannot_be_made_is_reported_and_the_candidates_stay(conn: Conn) -> None:
    run_naming(conn, "sha256/" + "ab" + "/" + "ab" + "0" * 62, days=10)
    prune(conn, WEEK)

    def broken() -> BlobStore:
        raise ValueError("invalid blob store URL 'ftp://x'")

    report = sweep_blobs(conn, broken, grace_s=0)

    assert report == SweepReport(error="no blob store: invalid blob store URL 'ftp://x'", left=True)
    assert len(candidates(conn)) == 1
    # Nothing was asked of a store: no "0 failed, kept" that hides the candidate left.
    assert swept(report).endswith(
        "; stopped, the candidates left for the next pass: no blob store: invalid blob store"
        " URL 'ftp://x'"
    )


def test_a_local_blob_put_while_the_sweep_deletes_it_is_never_lost(
    conn: Conn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    data = b"raced"
    key = store.put_bytes(data)
    old = time.time() - 7200
    os.utime(store.path_for(key), (old, old))
    real_rename = os.rename

    def put_first(src: Any, dst: Any) -> None:
        # A put of the same bytes between the sweep's look at the blob's time and its move.
        store.put_bytes(data)
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", put_first)
    assert store.delete_if_older(key, time.time() - 3600) == "recent"
    assert store.read_bytes(key) == data

    os.utime(store.path_for(key), (old, old))

    def put_after(src: Any, dst: Any) -> None:
        # A put right after the move finds no blob, and writes it anew.
        real_rename(src, dst)
        store.put_bytes(data)

    monkeypatch.setattr(os, "rename", put_after)
    assert store.delete_if_older(key, time.time() - 3600) == "deleted"
    assert store.read_bytes(key) == data
    assert [p.name for p in store.root.iterdir() if p.name.startswith(".")] == []


def test_the_retention_service_sweeps_after_its_pass_and_says_so(
    conn: Conn, pool: ConnectionPool, store: BlobStore
) -> None:
    key = store.put_bytes(b"pruned by a worker")
    run_naming(conn, key, days=10)
    pruner = Pruner(pool, older_than_s=WEEK, blob_grace_s=0, blob_store=lambda: store)

    report = pruner.run_once()

    assert report.jobs == 1 and report.blobs == SweepReport(deleted=1)
    assert not store.exists(key)
    assert said(report).endswith(
        "; deleted 1 blob no run references (kept 0 another run references and 0 put within "
        "the grace period; 0 were not in the store)"
    )


def test_a_sequential_store_stops_at_its_first_outage_and_sends_nothing_more(
    conn: Conn, tmp_path: Path
) -> None:
    class Flaky(LocalBlobStore):
        asked: list[str] = []

        def delete_if_older(self, key: str, before: float) -> Deletion:
            self.asked.append(key)
            if len(self.asked) == 2:
                raise BlobStoreUnavailable("the disk went away")
            if len(self.asked) == 3:
                raise AssertionError("asked after an outage")
            return super().delete_if_older(key, before)

    store = Flaky(tmp_path / "blobs")
    keys = sorted(store.put_bytes(f"blob {n}".encode()) for n in range(3))
    for key in keys:
        run_naming(conn, key, days=10)
    prune(conn, WEEK)

    report = sweep(conn, store)

    assert report == SweepReport(
        deleted=1, failed=1, error=f"{store.describe()}: the disk went away", left=True
    )
    assert store.asked == keys[:2] and candidates(conn) == keys[1:]


def test_a_sweep_out_of_time_leaves_the_unread_candidates_to_the_next_one(
    conn: Conn, store: BlobStore
) -> None:
    keys = sorted(store.put_bytes(f"budgeted {n}".encode()) for n in range(3))
    for key in keys:
        run_naming(conn, key, days=10)
    prune(conn, WEEK)
    # The start, then one reading before each batch after the first: two begin in the budget.
    ticks = iter([0.0, 1.0, 2.0])

    report = sweep_blobs(
        conn, lambda: store, grace_s=0, batch=1, budget_s=1.5, elapsed=lambda: next(ticks)
    )

    assert report == SweepReport(deleted=2, left=True, out_of_time=True)
    assert candidates(conn) == keys[2:] and store.exists(keys[2])
    assert swept(report).endswith("; out of time for this pass, the rest left for the next one")
    assert sweep(conn, store) == SweepReport(deleted=1)
    assert candidates(conn) == [] and not store.exists(keys[2])


def test_the_retention_service_sweeps_within_its_budget(
    conn: Conn, pool: ConnectionPool, tmp_path: Path
) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    # One batch more than the sweep reads at once: a budget of nothing still sweeps the first.
    keys = sorted(store.put_bytes(f"pass {n}".encode()) for n in range(BLOB_SWEEP_BATCH + 1))
    for key in keys:
        run_naming(conn, key, days=10)
    pruner = Pruner(
        pool, older_than_s=WEEK, blob_grace_s=0, blob_store=lambda: store, sweep_budget_s=0
    )

    report = pruner.run_once()

    assert report.blobs == SweepReport(deleted=BLOB_SWEEP_BATCH, left=True, out_of_time=True)
    assert candidates(conn) == keys[-1:] and store.exists(keys[-1])
    assert not store.exists(keys[0])
