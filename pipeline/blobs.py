"""Blob storage: large inputs live here, job payloads carry only the key.

Blobs are content-addressed: a blob's key is ``sha256/<first two hex digits>/<hex digest>``,
computed while the data streams in, so storing the same bytes twice is a no-op that returns
the same key. Two implementations sit behind one small interface:

* :class:`LocalBlobStore` keeps blobs under a directory (written to a temp file, then
  renamed into place, so a crash never leaves a partial blob under a real key).
* :class:`S3BlobStore` keeps them in an S3 bucket (AWS, MinIO, R2, ... via ``endpoint_url``).

:func:`blob_store_from_url` / :func:`blob_store_from_env` pick one from configuration.

Retention deletes a blob once no remaining run references it (pipeline/maintenance/blob_sweep.py).
So that a blob about to go is not lost to someone storing the same bytes again, a put that
finds its blob stored already refreshes its modification time, and the sweep deletes only
blobs left unmodified for a grace period (:meth:`BlobStore.delete_if_older`).
"""

from __future__ import annotations

import abc
import contextlib
import hashlib
import io
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal, NoReturn
from urllib.parse import unquote, urlsplit, urlunsplit

from pg_pipeline import paths
from pg_pipeline.extras import needs_extra

__all__ = [
    "BlobNotFound",
    "BlobStore",
    "BlobStoreError",
    "BlobStoreUnavailable",
    "LocalBlobStore",
    "S3BlobStore",
    "blob_keys",
    "blob_store_from_env",
    "blob_store_from_url",
    "content_key",
    "names_blob",
]

CHUNK_SIZE = 1024 * 1024
"""Bytes read per step when streaming; no operation holds more than this of a blob in memory
(except S3 multipart parts, which the transfer manager buffers one part size at a time)."""

KEY_PREFIX = "sha256/"
MAX_KEY_LENGTH = 1024  # S3's limit, in UTF-8 bytes; applied to local keys too for symmetry.

BLOB_URL_ENV = "PIPELINE_BLOB_URL"
PRIVATE_DIR = 0o700  #: blob and cache directories: the running user alone
S3_ENDPOINT_ENVS = ("PIPELINE_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")


class BlobStoreError(Exception):
    """Base class for blob store failures that are not a caller's bad key (``ValueError``)."""


class BlobNotFound(BlobStoreError, KeyError):
    """No blob is stored under ``key``. A ``KeyError``, so ``except KeyError`` also works."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key

    def __str__(self) -> str:
        return f"blob not found: {self.key!r}"


class BlobStoreUnavailable(BlobStoreError):
    """The store could not be reached or answered with a server error: transient, retry later."""


def content_key(hexdigest: str) -> str:
    """The key under which a blob with this sha256 hex digest is stored."""
    digest = hexdigest.lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"not a sha256 hex digest: {hexdigest!r}")
    return f"{KEY_PREFIX}{digest[:2]}/{digest}"


def names_blob(text: str) -> bool:
    """Whether `text` (a payload's JSON) may name a blob key: a substring test, so that
    enqueueing without blobs costs nothing more; `blob_keys` says which, when this holds."""
    return KEY_PREFIX in text


#: A key as content_key makes it (its two hex digits the digest's first), anywhere in a text: a
#: key inside a longer string (an S3 object key under a prefix, a URL) counts too, a longer run
#: of hex digits does not.
_KEY_IN_TEXT = re.compile(r"sha256/([0-9a-f]{2})/\1[0-9a-f]{62}(?![0-9a-f])")


def blob_keys(text: str) -> list[str]:
    """The blob keys `text` (a payload's JSON) names, each once, sorted: what its job's run
    references (retention deletes a blob once no run does). PostgreSQL's regular expressions
    took 50 us a payload for this; Python's take about one."""
    if KEY_PREFIX not in text:
        return []
    return sorted({match.group(0) for match in _KEY_IN_TEXT.finditer(text)})


#: What :meth:`BlobStore.delete_if_older` did: deleted the blob, left it (modified since the
#: time given), or found nothing under the key.
Deletion = Literal["deleted", "recent", "missing"]


def validate_key(key: str) -> str:
    """Reject keys that are empty, absolute, contain ``.``/``..``/empty segments, backslashes,
    NUL or other control characters. Raises ``ValueError`` naming the key; returns it otherwise.
    """
    if not isinstance(key, str):
        raise ValueError(f"invalid blob key {key!r}: not a string")
    problem: str | None = None
    if not key:
        problem = "empty"
    elif len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_LENGTH:
        problem = f"longer than {MAX_KEY_LENGTH} bytes"
    elif "\\" in key:
        problem = "contains a backslash"
    elif any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        problem = "contains NUL or a control character"
    elif key.startswith("/"):
        problem = "is absolute"
    elif any(part in ("", ".", "..") for part in key.split("/")):
        problem = "has an empty, '.' or '..' path segment"
    if problem is not None:
        raise ValueError(f"invalid blob key {key!r}: {problem}")
    return key


def _copy_hashing(src: BinaryIO, dst: BinaryIO) -> str:
    """Copy ``src`` to ``dst`` in bounded chunks; return the sha256 hex digest of the bytes."""
    digest = hashlib.sha256()
    while True:
        chunk = src.read(CHUNK_SIZE)
        if not chunk:
            break
        digest.update(chunk)
        dst.write(chunk)
    return digest.hexdigest()


def _unlink_quietly(path: str | Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class BlobStore(abc.ABC):
    """Content-addressed blob storage. Keys are opaque strings to callers: put them in payloads."""

    #: how many blobs retention's sweep asks the store to delete at once (threads)
    sweep_concurrency = 1

    @abc.abstractmethod
    def put_file(self, fileobj: BinaryIO) -> str:
        """Stream ``fileobj`` (from its current position to EOF) into the store; return its key."""

    @abc.abstractmethod
    def open(self, key: str) -> BinaryIO:
        """A binary stream of the blob. Close it (or use ``with``). Raises ``BlobNotFound``."""

    @abc.abstractmethod
    def exists(self, key: str) -> bool:
        """Whether a blob is stored under ``key``."""

    @abc.abstractmethod
    def describe(self) -> str:
        """One line saying where blobs live, for humans (``pipeline doctor``). No secrets."""

    @property
    @abc.abstractmethod
    def url(self) -> str:
        """The store as a URL that PIPELINE_BLOB_URL accepts (``file:///abs/dir``,
        ``s3://bucket/prefix``), never with credentials: what a job records so that a worker
        configured with another store can say so."""

    def delete_if_older(self, key: str, before: float) -> Deletion:
        """Delete the blob unless it was stored or put again (see put_file) at or after
        `before` (seconds since the epoch): retention's sweep of blobs no run references.
        Raises BlobStoreError (BlobStoreUnavailable when transient) when the store fails, and
        BlobStoreUnavailable for a blob it does not hold when it holds no blob at all (see
        holds_blobs)."""
        raise BlobStoreError(f"{type(self).__name__} cannot delete blobs")

    def holds_blobs(self) -> bool:
        """Whether the store holds any blob. A store that holds none (a directory or bucket
        that does not exist, a wrong prefix) is not where the blobs the sweep was told of were
        put: it says nothing about them."""
        raise BlobStoreError(f"{type(self).__name__} cannot tell whether it holds blobs")

    def _missing(self) -> Deletion:
        """delete_if_older's answer for a blob this store does not hold: "missing" (the sweep
        then forgets it), unless the store holds no blob at all, which is no answer: a sweep
        given the wrong store (PIPELINE_BLOB_URL unset or mistyped where it runs) would forget
        every candidate and leave their blobs in the right store for ever."""
        if not self.holds_blobs():
            raise BlobStoreUnavailable(
                "it holds no blobs at all: not the store they were put in (set"
                f" {BLOB_URL_ENV} as the workers have it)"
            )
        return "missing"

    def put_bytes(self, data: bytes) -> str:
        """Store ``data``; return its key."""
        return self.put_file(io.BytesIO(data))

    def read_bytes(self, key: str) -> bytes:
        """The whole blob in memory; prefer :meth:`open` or :meth:`download_to` for big ones."""
        with self.open(key) as stream:
            return stream.read()

    def download_to(self, key: str, path: Path) -> None:
        """Write the blob to ``path``, streaming. ``path`` appears complete or not at all."""
        path = Path(path)
        path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        with self.open(key) as stream:
            fd, tmp_name = tempfile.mkstemp(
                dir=path.parent, prefix=f".{path.name}.", suffix=".part"
            )
            try:
                with os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(stream, out, CHUNK_SIZE)
                os.replace(tmp_name, path)
            except BaseException:
                _unlink_quietly(tmp_name)
                raise

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


class LocalBlobStore(BlobStore):
    """Blobs as files under ``root``: ``root/sha256/ab/ab12...``.

    A put writes ``root/.incoming-*`` first and renames it into place with ``os.replace``; a
    process killed mid-put can leave such a temp file behind, but never a partial blob.
    """

    TEMP_PREFIX = ".incoming-"

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser().resolve()

    def describe(self) -> str:
        return f"local directory {self.root}"

    @property
    def url(self) -> str:
        return self.root.as_uri()

    def path_for(self, key: str) -> Path:
        """The file that holds ``key``. Raises ``ValueError`` for keys that escape the root."""
        validate_key(key)
        candidate = self.root / key
        # resolve() follows symlinks that already exist, so a symlinked directory inside the
        # root that points elsewhere is caught here too.
        if not candidate.resolve().is_relative_to(self.root):
            raise ValueError(f"invalid blob key {key!r}: resolves outside {self.root}")
        return candidate

    def put_file(self, fileobj: BinaryIO) -> str:
        # Documents are the tenants' data: only the user running pg-pipeline may list or read
        # them (mkstemp already makes the files 0600).
        self.root.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=self.root, prefix=self.TEMP_PREFIX)
        try:
            with os.fdopen(fd, "wb") as out:
                hexdigest = _copy_hashing(fileobj, out)
                out.flush()
                os.fsync(out.fileno())
            key = content_key(hexdigest)
            final = self.path_for(key)
            if self._touch(final):
                _unlink_quietly(tmp_name)  # same bytes are already there
                return key
            final.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
            os.replace(tmp_name, final)
        except BaseException:
            _unlink_quietly(tmp_name)
            raise
        self._fsync_dir(final.parent)
        return key

    @staticmethod
    def _touch(path: Path) -> bool:
        """Refresh the modification time of a blob stored already, so that a sweep that
        finds it unreferenced leaves it for the grace period (the job naming it is about to be
        enqueued); False when there is none (a sweep moved it away first: it is written anew)."""
        try:
            os.utime(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return path.is_file()

    def delete_if_older(self, key: str, before: float) -> Deletion:
        path = self.path_for(key)
        try:
            if path.stat().st_mtime >= before:
                return "recent"
            # Moved aside first, in one step: a put of the same bytes either refreshed its time
            # before (read again below, and the blob put back) or finds no blob and writes it
            # anew. Never a put that counted on a blob this then deletes.
            aside = self.root / f".deleting-{uuid.uuid4().hex}"
            os.rename(path, aside)
        except (FileNotFoundError, NotADirectoryError):
            return self._missing()
        if aside.stat().st_mtime >= before:
            os.replace(aside, path)  # a put's copy meanwhile holds the same bytes
            return "recent"
        os.unlink(aside)
        return "deleted"

    def holds_blobs(self) -> bool:
        return (self.root / KEY_PREFIX).is_dir()

    @staticmethod
    def _fsync_dir(directory: Path) -> None:
        # Make the rename durable; not every platform/filesystem allows opening a directory.
        try:
            dir_fd = os.open(directory, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(dir_fd)
        except OSError:
            pass
        finally:
            os.close(dir_fd)

    def open(self, key: str) -> BinaryIO:
        path = self.path_for(key)
        try:
            return path.open("rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise BlobNotFound(key) from None

    def exists(self, key: str) -> bool:
        return self.path_for(key).is_file()


class _S3ReadStream(io.RawIOBase):
    """Raw stream over a botocore ``StreamingBody`` that reports failures as blob store errors."""

    def __init__(self, body: Any, key: str) -> None:
        self._body = body
        self._key = key

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        with _translate_s3_errors(self._key):
            data: bytes = self._body.read(len(view))
        view[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            with contextlib.suppress(Exception):
                self._body.close()
        super().close()


def _error_code(error: Any) -> str:
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def _is_missing(error: Any) -> bool:
    response = getattr(error, "response", None) or {}
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return _error_code(error) in ("NoSuchKey", "404", "NotFound") or status == 404


_TRANSIENT_CODES = frozenset(
    {
        "InternalError",
        "RequestTimeout",
        "RequestTimeTooSkewed",
        "ServiceUnavailable",
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
    }
)


@contextlib.contextmanager
def _translate_s3_errors(key: str | None) -> Iterator[None]:
    """Map botocore failures onto BlobNotFound / BlobStoreUnavailable / BlobStoreError."""
    from botocore import exceptions as bce

    try:
        yield
    except bce.ClientError as error:
        if key is not None and _is_missing(error):
            raise BlobNotFound(key) from None
        response = error.response or {}
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        if status >= 500 or status == 429 or _error_code(error) in _TRANSIENT_CODES:
            raise BlobStoreUnavailable(f"S3 unavailable: {error}") from error
        raise BlobStoreError(f"S3 request failed: {error}") from error
    except (bce.ConnectionError, bce.HTTPClientError, bce.IncompleteReadError) as error:
        raise BlobStoreUnavailable(f"S3 unreachable: {error}") from error
    except bce.BotoCoreError as error:  # credentials, region, parameter problems: not transient
        raise BlobStoreError(f"S3 client error: {error}") from error


def _redact_url(url: str) -> str:
    """Drop any user:password@ part and query string from a URL before showing it."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class S3BlobStore(BlobStore):
    """Blobs as objects in ``bucket`` under ``prefix``: ``<prefix>/sha256/ab/ab12...``.

    Credentials and region come from the standard AWS chain (env vars, config files, instance
    roles). ``endpoint_url`` points at any S3-compatible service (MinIO, R2, ...); with one set,
    path-style addressing is used. Pass ``client`` to supply a ready boto3 S3 client instead.
    """

    #: A blob's deletion is two requests (HEAD, DELETE) of a round trip each: the sweep keeps
    #: eight in flight, within botocore's pool of ten connections.
    sweep_concurrency = 8

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        client: Any = None,
        *,
        multipart_threshold: int = 8 * 1024 * 1024,
        multipart_chunksize: int = 8 * 1024 * 1024,
        max_concurrency: int = 4,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
        max_attempts: int = 3,
        spool_max_memory: int = 4 * 1024 * 1024,
        spool_dir: Path | str | None = None,
    ) -> None:
        if not bucket or "/" in bucket:
            raise ValueError(f"invalid S3 bucket name: {bucket!r}")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        if self.prefix:
            validate_key(self.prefix)
        self.endpoint_url = endpoint_url or None
        self.spool_max_memory = spool_max_memory
        self.spool_dir = str(spool_dir) if spool_dir is not None else None

        with needs_extra("s3", "an s3:// blob store"):
            from boto3.s3.transfer import TransferConfig

        self.transfer_config = TransferConfig(
            multipart_threshold=multipart_threshold,
            multipart_chunksize=multipart_chunksize,
            max_concurrency=max_concurrency,
        )
        if client is None:
            client = self._make_client(connect_timeout, read_timeout, max_attempts)
        self.client = client

    def _make_client(self, connect_timeout: float, read_timeout: float, max_attempts: int) -> Any:
        with needs_extra("s3", "an s3:// blob store"):
            import boto3
            from botocore.config import Config

        options: dict[str, Any] = {
            "connect_timeout": connect_timeout,
            "read_timeout": read_timeout,
            # total_max_attempts counts the first try; botocore's "max_attempts" would not.
            "retries": {"total_max_attempts": max_attempts, "mode": "standard"},
        }
        if self.endpoint_url:
            # S3-compatible services (and IP/localhost endpoints) need path-style requests.
            options["s3"] = {"addressing_style": "path"}
            # Many S3-compatible services reject the default flexible checksums that newer
            # botocore sends on every upload; only send them where the API requires them,
            # unless the user chose otherwise through the standard env vars.
            if not os.environ.get("AWS_REQUEST_CHECKSUM_CALCULATION"):
                options["request_checksum_calculation"] = "when_required"
            if not os.environ.get("AWS_RESPONSE_CHECKSUM_VALIDATION"):
                options["response_checksum_validation"] = "when_required"
        session = boto3.session.Session()
        return session.client("s3", endpoint_url=self.endpoint_url, config=Config(**options))

    def describe(self) -> str:
        where = f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"
        if self.endpoint_url:
            return f"S3 bucket {where} at {_redact_url(self.endpoint_url)}"
        region = getattr(getattr(self.client, "meta", None), "region_name", None)
        return f"S3 bucket {where}" + (f" (region {region})" if region else "")

    @property
    def url(self) -> str:
        # The endpoint stays out, as it does from PIPELINE_BLOB_URL: it comes from the env.
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def object_key(self, key: str) -> str:
        """The S3 object key that holds blob ``key``."""
        validate_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def put_file(self, fileobj: BinaryIO) -> str:
        # The key depends on the hash, so the data must be seen in full before upload starts:
        # spool it (in memory up to spool_max_memory, on disk beyond) while hashing.
        with tempfile.SpooledTemporaryFile(
            max_size=self.spool_max_memory, mode="w+b", dir=self.spool_dir
        ) as spool:
            hexdigest = _copy_hashing(fileobj, spool)  # type: ignore[arg-type]
            key = content_key(hexdigest)
            if self._touch(key, hexdigest):
                return key
            spool.seek(0)
            with _translate_s3_errors(None):
                self.client.upload_fileobj(
                    spool,
                    self.bucket,
                    self.object_key(key),
                    ExtraArgs={
                        "ContentType": "application/octet-stream",
                        "Metadata": {"sha256": hexdigest},
                    },
                    Config=self.transfer_config,
                )
        return key

    def _touch(self, key: str, hexdigest: str) -> bool:
        """Refresh LastModified of a blob stored already (a copy onto itself, server-side: S3
        has no other way), so that a sweep that finds it unreferenced leaves it for the grace
        period; False when there is none. The managed copy reads its size first (the HEAD that
        said whether it exists), and copies one over 5 GiB in parts."""
        object_key = self.object_key(key)
        try:
            with _translate_s3_errors(key):
                self.client.copy(
                    {"Bucket": self.bucket, "Key": object_key},
                    self.bucket,
                    object_key,
                    ExtraArgs={
                        "MetadataDirective": "REPLACE",
                        "ContentType": "application/octet-stream",
                        "Metadata": {"sha256": hexdigest},
                    },
                    Config=self.transfer_config,
                )
        except BlobNotFound:
            return False
        return True

    def delete_if_older(self, key: str, before: float) -> Deletion:
        # S3 cannot delete on a condition of LastModified: a put of the same bytes between the
        # HEAD and the DELETE (milliseconds) still loses its blob (docs/operations.md).
        try:
            modified = self.head(key)["LastModified"]
        except BlobNotFound:
            return self._missing()
        if modified.timestamp() >= before:
            return "recent"
        with _translate_s3_errors(key):
            self.client.delete_object(Bucket=self.bucket, Key=self.object_key(key))
        return "deleted"

    def holds_blobs(self) -> bool:
        # One listing of at most one object: a bucket that does not exist answers NoSuchBucket
        # (a HEAD of an object in it answers 404, as for a missing object).
        prefix = self.object_key(KEY_PREFIX.rstrip("/")) + "/"
        try:
            with _translate_s3_errors(None):
                listed = self.client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, MaxKeys=1)
        except BlobStoreError as exc:
            cause = exc.__cause__
            if cause is not None and _error_code(cause) == "NoSuchBucket":
                return False
            raise
        return bool(listed.get("KeyCount") or listed.get("Contents"))

    def open(self, key: str) -> BinaryIO:
        object_key = self.object_key(key)
        with _translate_s3_errors(key):
            response = self.client.get_object(Bucket=self.bucket, Key=object_key)
        return io.BufferedReader(_S3ReadStream(response["Body"], key), buffer_size=CHUNK_SIZE)

    def exists(self, key: str) -> bool:
        object_key = self.object_key(key)
        try:
            with _translate_s3_errors(key):
                self.client.head_object(Bucket=self.bucket, Key=object_key)
        except BlobNotFound:
            return False
        return True

    def head(self, key: str) -> dict[str, Any]:
        """The raw ``head_object`` response for ``key`` (size, ETag, metadata)."""
        object_key = self.object_key(key)
        with _translate_s3_errors(key):
            response: dict[str, Any] = self.client.head_object(Bucket=self.bucket, Key=object_key)
        return response


def _s3_endpoint_from_env() -> str | None:
    for name in S3_ENDPOINT_ENVS:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def _bad_url(url: str, why: str) -> NoReturn:
    raise ValueError(f"invalid blob store URL {_redact_url(url)!r}: {why}")


def blob_store_from_url(url: str | None) -> BlobStore:
    """Build a store from a URL.

    * ``None`` or ``""``: a local store in ``<data dir>/blobs`` (see :mod:`pg_pipeline.paths`);
    * ``file:///abs/path`` or a plain filesystem path: a :class:`LocalBlobStore` there;
    * ``s3://bucket`` or ``s3://bucket/prefix``: an :class:`S3BlobStore`; the endpoint comes from
      ``PIPELINE_S3_ENDPOINT_URL``, ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` (first set),
      credentials from the standard AWS chain (never from the URL).
    """
    if url is None or not url.strip():
        return LocalBlobStore(paths.data_dir() / "blobs")
    url = url.strip()
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "s3":
        if "@" in parts.netloc:
            _bad_url(url, "credentials do not belong in the URL; use the AWS env vars or config")
        if not parts.netloc:
            _bad_url(url, "no bucket name")
        if parts.query or parts.fragment:
            _bad_url(url, "query strings and fragments are not supported")
        return S3BlobStore(
            bucket=parts.netloc,
            prefix=unquote(parts.path).strip("/"),
            endpoint_url=_s3_endpoint_from_env(),
        )
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            _bad_url(url, "file URLs must name a local absolute path (file:///path)")
        path = unquote(parts.path)
        if not path.startswith("/"):
            _bad_url(url, "file URLs must name an absolute path (file:///path)")
        return LocalBlobStore(Path(path))
    if scheme and len(scheme) > 1:  # a one-letter "scheme" is a Windows drive letter
        _bad_url(url, f"unsupported scheme {scheme!r} (use file:// or s3://, or a plain path)")
    return LocalBlobStore(Path(url))


def blob_store_from_env() -> BlobStore:
    """The store configured by ``PIPELINE_BLOB_URL`` (local data dir when unset)."""
    return blob_store_from_url(os.environ.get(BLOB_URL_ENV))
