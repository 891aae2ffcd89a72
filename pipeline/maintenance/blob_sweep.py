"""The blob sweep: blobs that no remaining run references are deleted from the blob store.

A run's references to blobs (pipeline.blob_refs: every blob key its jobs' payloads or its
stages' outputs named) are deleted with the run, by retention, in the transaction that deletes
it; each blob key whose reference went becomes a candidate (pipeline.blob_garbage). The sweep,
after each prune pass, reads the candidates in batches: one a run references again (the same
bytes uploaded and enqueued since: a blob many runs share stays until the last one goes) is no
candidate any more; any other is deleted from the store unless the store says it was written,
or put again, within the grace period. A put of bytes already stored refreshes their time
(pg_pipeline.blobs), so the blob of a job being enqueued right now is left alone, as long as
its job commits within the grace period of the put. The time is the store's; the period is
counted from before the batch's references were read, so a reference that commits after that
read had its put within the period, and its blob stays.

The store is the sweeping process's (PIPELINE_BLOB_URL): a candidate it does not hold (a
payload named another store) is counted as missing and dropped, unless the store holds no blob
at all (the wrong store: a directory or bucket that does not exist), which stops the sweep as an
unreachable store does. A candidate whose deletion
failed stays for the next sweep, and the sweep says so; when the store is unreachable the sweep
stops at once, the rest left for later, and never undoes or fails the prune before it. Runs
enqueued before migration 0029 have no references: their blobs are never candidates.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import psycopg

from pg_pipeline.blobs import (
    BlobStore,
    BlobStoreError,
    BlobStoreUnavailable,
    Deletion,
    blob_store_from_env,
)
from pg_pipeline.queries import Q
from pg_pipeline.wording import counted

log = logging.getLogger(__name__)

#: Seconds a blob no run references is kept after it was last written or put again: longer
#: than the time between putting a blob and committing the job that names it.
BLOB_GRACE_S = 3600.0
#: Candidates read per statement; each is a request or two to the store.
BLOB_SWEEP_BATCH = 100
#: Seconds the worker's retention pass sweeps before it leaves the rest to its next pass. A day
#: of a million one-blob runs is a million requests (hours on S3: 5-11 s a thousand through
#: moto's server), which would hold back the services that share its thread (the slot repair,
#: the next prune) as long. `pipeline prune` sweeps everything unless told a budget.
SWEEP_PASS_S = 60.0


@dataclass(frozen=True)
class SweepReport:
    """What one sweep did with the candidates it read."""

    deleted: int = 0  #: blobs deleted from the store
    referenced: int = 0  #: candidates a run references again: kept, candidates no more
    recent: int = 0  #: kept for now: written or put within the grace period
    missing: int = 0  #: not in this store (deleted already, or another store's)
    failed: int = 0  #: the store refused or failed: candidates still, for the next sweep
    #: what went wrong first (the store, and its error), when anything did
    error: str | None = None
    #: candidates not read: the sweep stopped (the store unreachable, or asked to stop)
    left: bool = False
    #: the sweep stopped at its time budget, the candidates after the last batch unread
    out_of_time: bool = False

    def __add__(self, other: SweepReport) -> SweepReport:
        return SweepReport(
            self.deleted + other.deleted,
            self.referenced + other.referenced,
            self.recent + other.recent,
            self.missing + other.missing,
            self.failed + other.failed,
            self.error or other.error,
            self.left or other.left,
            self.out_of_time or other.out_of_time,
        )


def sweep_blobs(
    conn: psycopg.Connection[Any],
    store: Callable[[], BlobStore] = blob_store_from_env,
    *,
    grace_s: float = BLOB_GRACE_S,
    batch: int = BLOB_SWEEP_BATCH,
    stop: Callable[[], bool] | None = None,
    budget_s: float | None = None,
    clock: Callable[[], float] = time.time,
    elapsed: Callable[[], float] = time.monotonic,
) -> SweepReport:
    """Delete from `store()` the candidates no run references and older than `grace_s`.
    `conn` in autocommit mode: each batch's statements commit on their own, and no transaction
    stays open while the store is asked. The store is made only when there are candidates, and
    a store that cannot be made (a bad PIPELINE_BLOB_URL, the s3 extra missing) is reported,
    never raised. With `budget_s`, no batch starts once that many seconds have gone (the first
    always does): the candidates not read are the next sweep's (`out_of_time`)."""
    report = SweepReport()
    made: BlobStore | None = None
    after = ""
    started = elapsed()
    more = True  # a batch came back full: candidates may follow it
    while more and not (stop is not None and stop()):
        if after and budget_s is not None and elapsed() - started >= budget_s:
            return report + SweepReport(left=True, out_of_time=True)
        before = clock() - grace_s  # before the references are read: see the module's docstring
        rows = conn.execute(Q["blob_sweep_take"], {"after": after, "batch": batch}).fetchall()
        if not rows:
            break
        after, more = rows[-1][0], len(rows) == batch
        referenced = sum(1 for _, _, used in rows if used)
        report += SweepReport(referenced=referenced)
        candidates = [(key, since) for key, since, used in rows if not used]
        if not candidates:
            continue
        if made is None:
            try:
                made = store()
            except (ValueError, ImportError, BlobStoreError) as exc:
                return report + SweepReport(error=f"no blob store: {exc}", left=True)
        done, outcome = _delete(made, candidates, before)
        if done:
            conn.execute(
                Q["blob_sweep_done"],
                {"keys": [key for key, _ in done], "since": [since for _, since in done]},
            )
        report += outcome
        if outcome.left:
            break
    return report


def _delete(
    store: BlobStore, candidates: list[tuple[str, Any]], before: float
) -> tuple[list[tuple[str, Any]], SweepReport]:
    """Ask `store` to delete each candidate, `store.sweep_concurrency` at a time; the candidates
    done with (deleted, or gone) and what became of them all. The first sign of an outage
    stops the rest: a request not yet sent is not sent (its candidate waits for the next sweep),
    so an unreachable store costs one timeout per thread, not one per candidate."""
    outage = threading.Event()

    def one(key: str) -> Deletion | Exception | None:
        if outage.is_set():
            return None
        try:
            return store.delete_if_older(key, before)
        except BlobStoreUnavailable as exc:
            # An outage fails every request alike: the rest wait for the next sweep.
            outage.set()
            return exc
        except (BlobStoreError, OSError) as exc:
            return exc

    keys = [key for key, _ in candidates]
    if store.sweep_concurrency > 1 and len(keys) > 1:
        with ThreadPoolExecutor(min(store.sweep_concurrency, len(keys))) as pool:
            outcomes = list(pool.map(one, keys))
    else:
        outcomes = [one(key) for key in keys]
    done: list[tuple[str, Any]] = []
    deleted = recent = missing = failed = 0
    error: str | None = None
    for (key, since), outcome in zip(candidates, outcomes, strict=True):
        if outcome is None:
            continue
        if isinstance(outcome, Exception):
            failed += 1
            where = "" if isinstance(outcome, BlobStoreUnavailable) else f" blob {key}:"
            error = error or f"{store.describe()}:{where} {outcome}"
        elif outcome == "recent":
            recent += 1
        else:
            done.append((key, since))
            deleted += outcome == "deleted"
            missing += outcome == "missing"
    return done, SweepReport(deleted, 0, recent, missing, failed, error, outage.is_set())


def swept(report: SweepReport) -> str:
    """What a sweep did, as `pipeline prune` and the worker's log say it."""
    were = "was" if report.missing == 1 else "were"
    text = (
        f"deleted {counted(report.deleted, 'blob')} no run references"
        f" (kept {report.referenced} another run references and {report.recent} put within"
        f" the grace period; {report.missing} {were} not in the store)"
    )
    if report.failed:
        left = ", the rest left for the next pass" if report.left else ""
        text += f"; {report.failed} failed, kept for the next pass{left}: {report.error}"
    elif report.error:
        # Nothing failed: the sweep stopped before asking the store (it could not be made).
        text += f"; stopped, the candidates left for the next pass: {report.error}"
    if report.out_of_time:
        text += "; out of time for this pass, the rest left for the next one"
    return text
