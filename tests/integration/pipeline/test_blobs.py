"""Blob stores: local directory and S3 (moto's server over real HTTP on 127.0.0.1)."""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import io
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pg_pipeline import blobs
from pg_pipeline.blobs import (
    BlobNotFound,
    BlobStore,
    BlobStoreError,
    BlobStoreUnavailable,
    LocalBlobStore,
    S3BlobStore,
    blob_store_from_env,
    blob_store_from_url,
    content_key,
)
from tests.support import s3_server
from tests.support.waiting import wait_for

MiB = 1024 * 1024
PART_SIZE = 5 * MiB  # S3's minimum multipart part size


def sha256_key(data: bytes) -> str:
    hexdigest = hashlib.sha256(data).hexdigest()
    return f"sha256/{hexdigest[:2]}/{hexdigest}"


def make_s3_store(endpoint_url: str, bucket: str, **options: Any) -> S3BlobStore:
    settings: dict[str, Any] = {
        "prefix": "tenant-a/blobs",
        "multipart_threshold": PART_SIZE,
        "multipart_chunksize": PART_SIZE,
        "max_attempts": 1,
        "connect_timeout": 2,
        "read_timeout": 10,
    }
    settings.update(options)
    return S3BlobStore(bucket, endpoint_url=endpoint_url, **settings)


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "local":
        return LocalBlobStore(tmp_path / "blobs")
    endpoint_url = request.getfixturevalue("moto_s3_endpoint")
    bucket = request.getfixturevalue("s3_bucket")
    return make_s3_store(endpoint_url, bucket)


def count_s3_uploads(store: S3BlobStore) -> list[str]:
    """Record every upload-type request the store's client sends (real botocore events)."""
    seen: list[str] = []

    def record(model: Any, **_: Any) -> None:
        seen.append(model.name)

    for operation in ("PutObject", "CreateMultipartUpload", "UploadPart"):
        store.client.meta.events.register(f"before-call.s3.{operation}", record)
    return seen


class RecordingReader(io.RawIOBase):
    """A binary stream over a file that records every read size requested of it."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("rb")
        self.requested: list[int | None] = []

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        self.requested.append(size)
        return self._file.read(-1 if size is None else size)

    def close(self) -> None:
        self._file.close()
        super().close()


class FailingReader(io.RawIOBase):
    """Yields some data, then fails like a dropped network stream."""

    def __init__(self, good_bytes: int) -> None:
        self._left = good_bytes

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if self._left <= 0:
            raise OSError("connection reset while reading the upload")
        n = self._left if size is None or size < 0 else min(size, self._left)
        self._left -= n
        return b"x" * n


# --- both stores -------------------------------------------------------------------------------


def test_content_addressed_keys_and_dedup(store: BlobStore) -> None:
    data = b"%PDF-1.7 pretend this is a tender document\n"
    key = store.put_bytes(data)
    assert key == sha256_key(data) == content_key(hashlib.sha256(data).hexdigest())
    assert store.exists(key)
    assert store.read_bytes(key) == data

    if isinstance(store, S3BlobStore):
        uploads = count_s3_uploads(store)
        assert store.put_bytes(data) == key
        assert store.put_file(io.BytesIO(data)) == key
        assert uploads == []  # it exists: refreshed by a copy onto itself, not uploaded again
        raw = s3_server.s3_client(store.endpoint_url or "")
        listed = raw.list_objects_v2(Bucket=store.bucket)["Contents"]
        assert [obj["Key"] for obj in listed] == [f"tenant-a/blobs/{key}"]
    else:
        assert isinstance(store, LocalBlobStore)
        before = os.stat(store.path_for(key))
        assert store.put_bytes(data) == key
        assert store.put_file(io.BytesIO(data)) == key
        after = os.stat(store.path_for(key))
        # The same file, not written again; its time refreshed (see the blob sweep).
        assert after.st_ino == before.st_ino
        assert after.st_mtime_ns >= before.st_mtime_ns
        assert sorted(p.relative_to(store.root).as_posix() for p in store.root.rglob("*")) == [
            "sha256",
            f"sha256/{key.split('/')[1]}",
            key,
        ]

    other = store.put_bytes(data + b"!")
    assert other != key
    assert store.read_bytes(other) == data + b"!"
    assert store.read_bytes(key) == data


def modified(store: BlobStore, key: str) -> float:
    """When the store says the blob was last written: its file's time, its object's."""
    if isinstance(store, S3BlobStore):
        return float(store.head(key)["LastModified"].timestamp())
    assert isinstance(store, LocalBlobStore)
    return store.path_for(key).stat().st_mtime


def test_a_put_of_stored_bytes_refreshes_their_time_so_a_sweep_leaves_them(
    store: BlobStore,
) -> None:
    data = b"stored long ago, put again now"
    key = store.put_bytes(data)
    store.put_bytes(b"another blob: a store that holds none cannot say a blob is missing")
    if isinstance(store, LocalBlobStore):
        os.utime(store.path_for(key), (time.time() - 7200,) * 2)
    stored = modified(store, key)
    # S3 keeps the time to the second: the put that refreshes it may take a second to tell.
    wait_for(
        lambda: store.put_bytes(data) == key and modified(store, key) > stored,
        timeout=5,
        what="a put to refresh the blob's time",
    )
    refreshed = modified(store, key)

    assert store.delete_if_older(key, refreshed) == "recent"
    assert store.read_bytes(key) == data
    assert store.delete_if_older(key, refreshed + 1) == "deleted"
    assert not store.exists(key)
    assert store.delete_if_older(key, refreshed + 1) == "missing"
    assert store.put_bytes(data) == key and store.read_bytes(key) == data


def test_empty_blob(store: BlobStore) -> None:
    key = store.put_bytes(b"")
    assert key == sha256_key(b"")
    assert store.exists(key)
    assert store.read_bytes(key) == b""


def test_large_file_streams_in_chunks(store: BlobStore, tmp_path: Path) -> None:
    source = tmp_path / "big.bin"
    data = os.urandom(11 * MiB)
    source.write_bytes(data)
    expected_key = sha256_key(data)
    del data

    reader = RecordingReader(source)
    with reader:
        key = store.put_file(reader)  # type: ignore[arg-type]
    assert key == expected_key
    # Streamed: every read asked for a bounded chunk, never "everything".
    assert reader.requested, "put_file never read the input"
    assert all(size is not None and 0 < size <= blobs.CHUNK_SIZE for size in reader.requested)

    if isinstance(store, S3BlobStore):
        head = store.head(key)
        assert head["ContentLength"] == 11 * MiB
        # An S3 multipart object's ETag is "<md5 of part md5s>-<number of parts>".
        assert head["ETag"].strip('"').endswith("-3"), head["ETag"]
        assert head["Metadata"] == {"sha256": key.rsplit("/", 1)[1]}

    target = tmp_path / "out" / "copy.bin"
    store.download_to(key, target)
    assert hashlib.sha256(target.read_bytes()).hexdigest() == key.rsplit("/", 1)[1]
    assert sorted(p.name for p in target.parent.iterdir()) == ["copy.bin"]  # no .part left


def test_round_trip_open_read_download(store: BlobStore, tmp_path: Path) -> None:
    data = bytes(range(256)) * 1000
    key = store.put_file(io.BytesIO(data))

    with store.open(key) as stream:
        first = stream.read(10)
        rest = b"".join(iter(lambda: stream.read(4096), b""))
    assert first + rest == data

    assert store.read_bytes(key) == data

    target = tmp_path / "download" / "page.bin"
    target.parent.mkdir()
    target.write_bytes(b"stale contents")
    store.download_to(key, target)
    assert target.read_bytes() == data
    assert sorted(p.name for p in target.parent.iterdir()) == ["page.bin"]


def test_missing_key_raises_blob_not_found(store: BlobStore, tmp_path: Path) -> None:
    store.put_bytes(b"something else, so the store is not empty")
    key = sha256_key(b"never stored")
    assert not store.exists(key)
    with pytest.raises(BlobNotFound) as excinfo:
        store.open(key)
    assert excinfo.value.key == key
    assert key in str(excinfo.value)
    with pytest.raises(KeyError):  # BlobNotFound is a KeyError
        store.read_bytes(key)
    target = tmp_path / "never.bin"
    with pytest.raises(BlobNotFound):
        store.download_to(key, target)
    assert not target.exists()
    assert list(tmp_path.glob(".never.bin*")) == []


@pytest.mark.parametrize("key", ["../outside", "/etc/passwd", "sha256/../../x", "a\\b", "a\x00b"])
def test_bad_keys_rejected(store: BlobStore, key: str) -> None:
    for operation in (store.open, store.exists, store.read_bytes):
        with pytest.raises(ValueError, match="invalid blob key"):
            operation(key)


# --- local store -------------------------------------------------------------------------------

EVIL_KEYS = [
    "",
    ".",
    "..",
    "../secret",
    "../../etc/passwd",
    "sha256/../../secret",
    "sha256/ab/../../../secret",
    "/etc/passwd",
    "//etc/passwd",
    "sha256//ab",
    "./sha256/ab",
    "sha256/ab/",
    "..\\secret",
    "sha256\\..\\..\\secret",
    "C:\\Windows\\system.ini",
    "sha256/ab\x00/cd",
    "line\nbreak",
]


@pytest.mark.parametrize("key", EVIL_KEYS)
def test_local_rejects_keys_escaping_root(tmp_path: Path, key: str) -> None:
    store = LocalBlobStore(tmp_path / "root")
    (tmp_path / "secret").write_bytes(b"not for you")
    for operation in (store.open, store.exists, store.read_bytes, store.path_for):
        with pytest.raises(ValueError) as excinfo:
            operation(key)
        assert repr(key) in str(excinfo.value)
    with pytest.raises(ValueError):
        store.download_to(key, tmp_path / "out.bin")
    assert not (tmp_path / "out.bin").exists()


def test_local_rejects_symlink_escape(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"not for you")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    store = LocalBlobStore(root)
    with pytest.raises(ValueError, match=r"'link/secret'.*outside"):
        store.open("link/secret")
    with pytest.raises(ValueError):
        store.exists("link/secret")

    # A symlinked sha256/ directory pointing out of the root is refused on write, too.
    (root / "sha256").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match="outside"):
        store.put_bytes(b"data")
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
    assert sorted(p.name for p in root.iterdir()) == ["link", "sha256"]  # temp file removed


def test_local_put_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    keys = {store.put_bytes(b"a"), store.put_bytes(b"b"), store.put_bytes(b"a")}
    assert len(keys) == 2

    # A stream that dies halfway leaves neither a blob nor a temp file behind.
    with pytest.raises(OSError, match="connection reset"):
        store.put_file(FailingReader(good_bytes=3 * blobs.CHUNK_SIZE // 2))  # type: ignore[arg-type]

    files = sorted(
        p.relative_to(store.root).as_posix() for p in store.root.rglob("*") if p.is_file()
    )
    assert files == sorted(keys)
    assert not any(name.startswith(LocalBlobStore.TEMP_PREFIX) for name in os.listdir(store.root))


def test_local_blob_not_found_for_directories(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    key = store.put_bytes(b"x")
    directory_key = key.rsplit("/", 1)[0]
    assert not store.exists(directory_key)
    with pytest.raises(BlobNotFound):
        store.open(directory_key)
    with pytest.raises(BlobNotFound):
        store.open(key + "/deeper")


# --- S3 failure modes --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def assert_unavailable_quickly(store: S3BlobStore, key: str, limit_s: float = 5.0) -> None:
    for call in (
        lambda: store.put_bytes(b"payload"),
        lambda: store.open(key),
        lambda: store.exists(key),
    ):
        started = time.monotonic()
        with pytest.raises(BlobStoreUnavailable):
            call()
        assert time.monotonic() - started < limit_s


def test_s3_stopped_endpoint_is_unavailable(aws_test_env: None) -> None:
    with s3_server.running_moto_server() as endpoint_url:
        bucket = s3_server.create_bucket(endpoint_url)
        key = make_s3_store(endpoint_url, bucket).put_bytes(b"stored before the outage")
    # The server is gone now; a fresh store (no pooled connections) must fail fast.
    store = make_s3_store(endpoint_url, bucket, connect_timeout=1, read_timeout=1)
    assert_unavailable_quickly(store, key)


def test_s3_unreachable_port_is_unavailable(aws_test_env: None) -> None:
    endpoint_url = f"http://127.0.0.1:{free_port()}"
    store = make_s3_store(endpoint_url, "bucket", connect_timeout=1, read_timeout=1)
    assert_unavailable_quickly(store, sha256_key(b"x"))


def test_s3_hanging_endpoint_times_out_as_unavailable(aws_test_env: None) -> None:
    # A socket that listens but never accepts: connects succeed, answers never come.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        endpoint_url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        store = make_s3_store(endpoint_url, "bucket", connect_timeout=0.5, read_timeout=0.5)
        started = time.monotonic()
        with pytest.raises(BlobStoreUnavailable):
            store.exists(sha256_key(b"x"))
        assert time.monotonic() - started < 5


@contextlib.contextmanager
def http_status_server(status: int) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 that answers every request with ``status``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            body = b"" if self.command == "HEAD" else b"<Error><Code>Oops</Code></Error>"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_HEAD = do_PUT = do_POST = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_s3_server_errors_map_to_unavailable_and_client_errors_do_not(aws_test_env: None) -> None:
    key = sha256_key(b"x")
    with http_status_server(503) as endpoint_url:
        store = make_s3_store(endpoint_url, "bucket")
        assert_unavailable_quickly(store, key)
    with http_status_server(403) as endpoint_url:
        store = make_s3_store(endpoint_url, "bucket")
        with pytest.raises(BlobStoreError) as excinfo:
            store.open(key)
        assert not isinstance(excinfo.value, BlobStoreUnavailable | BlobNotFound)


def test_s3_client_defaults_are_modest(aws_test_env: None) -> None:
    store = S3BlobStore("bucket", endpoint_url="http://127.0.0.1:9")
    config = store.client.meta.config
    assert config.connect_timeout == 5
    assert config.read_timeout == 60
    assert config.retries == {"total_max_attempts": 3, "mode": "standard"}
    assert store.transfer_config.multipart_threshold == 8 * MiB


# --- configuration -----------------------------------------------------------------------------


def test_from_url_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_HOME", str(tmp_path / "home"))
    for url in (None, "", "  "):
        store = blob_store_from_url(url)
        assert isinstance(store, LocalBlobStore)
        assert store.root == (tmp_path / "home" / "blobs").resolve()

    store = blob_store_from_url(f"file://{tmp_path}/file%20url")
    assert isinstance(store, LocalBlobStore) and store.root == tmp_path / "file url"
    store = blob_store_from_url(f"file://localhost{tmp_path}/x")
    assert isinstance(store, LocalBlobStore) and store.root == tmp_path / "x"
    store = blob_store_from_url(str(tmp_path / "plain"))
    assert isinstance(store, LocalBlobStore) and store.root == tmp_path / "plain"
    assert str(tmp_path / "plain") in store.describe()

    monkeypatch.setenv("PIPELINE_BLOB_URL", str(tmp_path / "from-env"))
    store = blob_store_from_env()
    assert isinstance(store, LocalBlobStore) and store.root == tmp_path / "from-env"
    monkeypatch.delenv("PIPELINE_BLOB_URL")
    store = blob_store_from_env()
    assert isinstance(store, LocalBlobStore) and store.root == tmp_path / "home" / "blobs"


def test_from_url_s3_endpoint_precedence(
    aws_test_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = blob_store_from_url("s3://my-bucket/some/prefix/")
    assert isinstance(store, S3BlobStore)
    assert (store.bucket, store.prefix, store.endpoint_url) == ("my-bucket", "some/prefix", None)
    assert store.object_key("sha256/ab/abc") == "some/prefix/sha256/ab/abc"

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://generic:9000")
    assert blob_store_from_url("s3://b").endpoint_url == "http://generic:9000"  # type: ignore[attr-defined]
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://s3-specific:9000")
    assert blob_store_from_url("s3://b").endpoint_url == "http://s3-specific:9000"  # type: ignore[attr-defined]
    monkeypatch.setenv("PIPELINE_S3_ENDPOINT_URL", "http://user:hunter2@minio:9000/?token=t0k")
    store = blob_store_from_url("s3://b/p")
    assert isinstance(store, S3BlobStore)
    assert store.endpoint_url == "http://user:hunter2@minio:9000/?token=t0k"
    description = store.describe()
    assert "s3://b/p" in description and "minio:9000" in description
    assert (
        "hunter2" not in description and "t0k" not in description and "testing" not in description
    )


@pytest.mark.parametrize(
    "url",
    [
        "s3://",
        "s3:///prefix",
        "s3://AKIA:secret@bucket/p",
        "s3://b?x=1",
        "ftp://host/x",
        "file://host/x",
    ],
)
def test_from_url_rejects_bad_urls(aws_test_env: None, url: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        blob_store_from_url(url)
    assert "secret" not in str(excinfo.value)


def test_from_url_s3_round_trip(
    moto_s3_endpoint: str, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_S3_ENDPOINT_URL", moto_s3_endpoint)
    monkeypatch.setenv("PIPELINE_BLOB_URL", f"s3://{s3_bucket}/env-prefix")
    store = blob_store_from_env()
    key = store.put_bytes(b"via the environment")
    assert blob_store_from_env().read_bytes(key) == b"via the environment"
    raw = s3_server.s3_client(moto_s3_endpoint)
    assert raw.head_object(Bucket=s3_bucket, Key=f"env-prefix/{key}")["ContentLength"] == 19


def test_local_blob_directories_are_private_to_the_user(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    key = store.put_bytes(b"a tenant's document")
    path = store.path_for(key)
    assert path.stat().st_mode & 0o077 == 0
    for directory in (tmp_path / "blobs", path.parent):
        assert directory.stat().st_mode & 0o077 == 0, directory


def test_a_store_url_is_what_pipeline_blob_url_takes_back_and_holds_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = blobs.blob_store_from_url(str(tmp_path / "blobs"))
    assert local.url == (tmp_path / "blobs").as_uri()
    assert blobs.blob_store_from_url(local.url).url == local.url
    monkeypatch.setenv("PIPELINE_S3_ENDPOINT_URL", "http://minio:s3cret@127.0.0.1:9000")
    remote = blobs.blob_store_from_url("s3://docs/tenders/")
    assert remote.url == "s3://docs/tenders"
    assert blobs.blob_store_from_url(remote.url).url == remote.url
    assert "s3cret" not in remote.url
