"""A worker's copies of documents from remote blob storage (S3), bounded by size and by age.

PDFium needs a file, and every page of a document is a job of its own: a worker keeps the
document it downloaded for one page, so that the document's other pages it runs read it from
disk. What it keeps is bounded: a copy unused for ``max_age_s`` is deleted, and while the copies
take more than ``max_bytes`` the least recently used go first. A job reads its document through
a hard link of its own (:meth:`DocumentCache.copy_of`), which it removes when it ends, so that an
eviction never pulls a file from under a running job (the link keeps the bytes until then).

Eviction runs after each download and, so that a worker that has gone idle keeps the promise
too, every ``max_age_s / 24`` in a thread of its own: a pruned document's pages leave every
worker's disk within ``max_age_s`` of their last use.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pg_pipeline import BlobStore

logger = logging.getLogger(__name__)

#: Where a job's hard links live, beside the cached copies (one file system: links need it).
HELD = ".held"
DEFAULT_MAX_BYTES = 2 * 1024**3
DEFAULT_MAX_AGE_S = 24 * 3600.0


@dataclass(frozen=True)
class _Entry:
    path: Path
    size: int
    used: float  # the copy's mtime: set at each use


class DocumentCache:
    """Copies of blobs under ``root``, one file per key, least recently used out first."""

    def __init__(self, root: Path, *, max_bytes: int, max_age_s: float) -> None:
        if max_bytes < 0 or max_age_s <= 0:
            raise ValueError("the document cache needs max_bytes >= 0 and max_age_s > 0")
        self.root = root
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        self._lock = threading.Lock()
        self._sweeper: threading.Thread | None = None

    @contextlib.contextmanager
    def copy_of(self, store: BlobStore, key: str) -> Iterator[Path]:
        """A path to the blob's bytes that stays valid until the ``with`` block ends."""
        held = self.root / HELD / f"{os.getpid()}-{uuid.uuid4().hex}"
        held.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        cached = self.root / key.replace("/", "_")
        for _ in range(3):  # an eviction may take the copy between the download and the link
            if not cached.exists():
                store.download_to(key, cached)  # atomic: complete or absent
            try:
                _hold(cached, held)
                break
            except FileNotFoundError:
                continue
        else:
            raise RuntimeError(f"the cached copy of {key} kept vanishing under {self.root}")
        with contextlib.suppress(FileNotFoundError):
            os.utime(cached)  # used now: the last to go
        self._start_sweeper()
        try:
            self.evict()
            yield held
        finally:
            with contextlib.suppress(FileNotFoundError):
                held.unlink()

    def evict(self, now: float | None = None) -> list[Path]:
        """Delete copies unused for ``max_age_s``, then the least recently used while the rest
        take more than ``max_bytes``, and links left by processes that died; what was deleted."""
        now = time.time() if now is None else now
        deleted: list[Path] = []
        with self._lock:
            entries = sorted(self._entries(), key=lambda e: e.used)
            total = sum(e.size for e in entries)
            for entry in entries:
                if entry.used >= now - self.max_age_s and total <= self.max_bytes:
                    break
                with contextlib.suppress(FileNotFoundError):
                    entry.path.unlink()
                    deleted.append(entry.path)
                total -= entry.size
            deleted += self._orphaned_links(now)
        return deleted

    def _entries(self) -> list[_Entry]:
        entries = []
        with contextlib.suppress(FileNotFoundError):
            for path in self.root.iterdir():
                # Dot files: the held links, and downloads in progress (``.KEY.*.part``).
                if path.name.startswith("."):
                    continue
                with contextlib.suppress(FileNotFoundError):
                    stat = path.stat()
                    entries.append(_Entry(path, stat.st_size, stat.st_mtime))
        return entries

    def _orphaned_links(self, now: float) -> list[Path]:
        """Links of jobs whose process died, and downloads it left half done."""
        deleted = []
        with contextlib.suppress(FileNotFoundError):
            for part in self.root.glob(".*.part"):
                with contextlib.suppress(FileNotFoundError):
                    if part.stat().st_mtime < now - self.max_age_s:
                        part.unlink()
                        deleted.append(part)
        with contextlib.suppress(FileNotFoundError):
            for link in (self.root / HELD).iterdir():
                pid = int(link.name.split("-", 1)[0]) if link.name[0].isdigit() else 0
                if pid <= 0 or not _alive(pid):
                    with contextlib.suppress(FileNotFoundError):
                        link.unlink()
                        deleted.append(link)
        return deleted

    def _start_sweeper(self) -> None:
        with self._lock:
            if self._sweeper is not None and self._sweeper.is_alive():
                return
            self._sweeper = threading.Thread(
                target=self._sweep, name="document-cache-sweeper", daemon=True
            )
            self._sweeper.start()

    def _sweep(self) -> None:
        interval = max(60.0, self.max_age_s / 24)
        while True:
            time.sleep(interval)
            try:
                self.evict()
            except OSError as exc:  # a full or read-only disk: the next sweep tries again
                logger.warning("document cache %s: %s", self.root, exc)


def _hold(cached: Path, held: Path) -> None:
    """Make ``held`` a name of its own for ``cached``'s bytes: a hard link, or a copy on a file
    system without them (some network and FUSE ones), which costs the disk a second copy while
    the job runs but keeps the same promise."""
    try:
        os.link(cached, held)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        shutil.copyfile(cached, held)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
