"""A worker's copies of remote documents: bounded by size and age, never pulled from under a
running job; and the document stages reading S3 blobs through it (moto's server over HTTP)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pg_pipeline import LocalBlobStore
from pg_pipeline_documents import documents
from pg_pipeline_documents.document_cache import HELD, DocumentCache


@pytest.fixture
def store(tmp_path: Path) -> LocalBlobStore:
    return LocalBlobStore(tmp_path / "blobs")


def put(store: LocalBlobStore, body: bytes) -> str:
    return store.put_bytes(body)


def cached(cache: DocumentCache) -> set[str]:
    return {p.name for p in cache.root.iterdir() if not p.name.startswith(".")}


def use(cache: DocumentCache, store: LocalBlobStore, key: str) -> None:
    with cache.copy_of(store, key) as path:
        assert path.read_bytes() == store.path_for(key).read_bytes()


def test_copies_beyond_the_size_bound_go_least_recently_used_first(
    tmp_path: Path, store: LocalBlobStore
) -> None:
    cache = DocumentCache(tmp_path / "cache", max_bytes=2500, max_age_s=3600)
    a, b, c, d = (put(store, bytes([n]) * 1000) for n in range(4))
    start = time.time() - 60
    for n, key in enumerate((a, b, c, a)):  # a is used again: b is now the least recent
        use(cache, store, key)
        # A use time a second apart each, whatever the file system's clock resolution.
        os.utime(cache.root / key.replace("/", "_"), (start + n, start + n))

    use(cache, store, d)

    assert cached(cache) == {a.replace("/", "_"), d.replace("/", "_")}


def test_a_copy_unused_for_its_max_age_is_deleted(tmp_path: Path, store: LocalBlobStore) -> None:
    cache = DocumentCache(tmp_path / "cache", max_bytes=10**9, max_age_s=3600)
    use(cache, store, put(store, b"%PDF-1.4 old"))
    fresh = put(store, b"%PDF-1.4 fresh")
    use(cache, store, fresh)

    assert cache.evict(now=time.time() + 1800) == []
    later = time.time() + 3601
    os.utime(cache.root / fresh.replace("/", "_"), (later, later))  # used again, much later
    cache.evict(now=later + 1)

    assert cached(cache) == {fresh.replace("/", "_")}


def test_a_copy_a_job_is_reading_survives_its_eviction(
    tmp_path: Path, store: LocalBlobStore
) -> None:
    cache = DocumentCache(tmp_path / "cache", max_bytes=0, max_age_s=3600)
    key = put(store, b"%PDF-1.4 in use")

    with cache.copy_of(store, key) as path:
        cache.evict(now=time.time() + 10**6)
        assert cached(cache) == set()
        assert path.read_bytes() == b"%PDF-1.4 in use"  # the job's own link holds the bytes

    assert list((cache.root / HELD).iterdir()) == []


def test_on_a_file_system_without_hard_links_a_job_reads_a_copy_of_its_own(
    tmp_path: Path, store: LocalBlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(src: object, dst: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    cache = DocumentCache(tmp_path / "cache", max_bytes=0, max_age_s=3600)
    key = put(store, b"%PDF-1.4 on a share")

    with cache.copy_of(store, key) as path:
        cache.evict(now=time.time() + 10**6)
        assert cached(cache) == set()
        assert path.read_bytes() == b"%PDF-1.4 on a share"

    assert list((cache.root / HELD).iterdir()) == []


def test_links_and_downloads_left_by_a_dead_process_are_removed(
    tmp_path: Path, store: LocalBlobStore
) -> None:
    cache = DocumentCache(tmp_path / "cache", max_bytes=10**9, max_age_s=3600)
    use(cache, store, put(store, b"%PDF-1.4"))
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    orphan = cache.root / HELD / f"{int(dead.stdout)}-left-behind"
    orphan.write_bytes(b"%PDF-1.4")
    part = cache.root / ".sha256_ab.x.part"
    part.write_bytes(b"%PDF-1")
    long_ago = time.time() - 7200
    os.utime(part, (long_ago, long_ago))

    deleted = cache.evict()

    assert set(deleted) == {orphan, part}


@pytest.fixture
def s3_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moto_s3_endpoint: str, s3_bucket: str
) -> Iterator[None]:
    """The document stages on an S3 blob store, with a 2,500-byte cache in a fresh home."""
    monkeypatch.setenv("PIPELINE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIPELINE_BLOB_URL", f"s3://{s3_bucket}/docs")
    monkeypatch.setenv("PIPELINE_S3_ENDPOINT_URL", moto_s3_endpoint)
    monkeypatch.setenv(documents.CACHE_MAX_BYTES_ENV, "2500")
    monkeypatch.setattr(documents, "_store", None)
    monkeypatch.setattr(documents, "_cache", None)
    yield
    monkeypatch.setattr(documents, "_store", None)
    monkeypatch.setattr(documents, "_cache", None)


def test_a_worker_reading_s3_documents_keeps_at_most_its_cache_bound_on_disk(
    tmp_path: Path, s3_documents: None
) -> None:
    keys = [documents.blob_store().put_bytes(bytes([n]) * 1000) for n in range(5)]

    for key in keys:
        with documents.local_copy(key) as path:
            assert path.read_bytes()[:1] == bytes([keys.index(key)])

    cache = tmp_path / "home" / "cache"
    kept = [p for p in cache.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in kept) <= 2500
    assert len(kept) == 2
