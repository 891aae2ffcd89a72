"""Retention: finished runs older than a cutoff are deleted, with their outputs and joins.

Finished jobs live in pipeline.job_history, one partition per UTC day. A day wholly before the
cutoff goes at once: its runs that must outlive it (a job of theirs still queued or running,
finished on another day or kept already, or failed under keep_failed) are found first, without
a lock; then, in one short transaction under an exclusive lock on the history, runs that gained
a queued or running job since are added, the survivors' rows of the day are copied into
pipeline.job_history_kept and the day is detached; then it is dropped, with the outputs, join
rows and dedup keys of its other jobs. What remains is deleted run by run, as below: the days
that straddle the cutoff (the legacy partition of an upgraded installation among them) and the
kept rows, each run once all of it is past the cutoff.

A run (a root job and everything it led to) is deleted only once all of it is finished and
past the cutoff, never while any of its jobs is queued or running: a live run still reads its
earlier stages' outputs and counts its fan-outs' joins. A run goes whole, in one transaction,
with every one of its jobs locked first: a retry (or any other change to one of its jobs) at the
same moment either comes first, and the run stays, or waits and finds the run gone; it never
finds half a run. Batches are short transactions, so a prune of millions of rows never holds
locks or one long snapshot (which would keep vacuum from cleaning up after the claims) for long.
A batch reads the runs it meets, and deletes them, in the days of the history that can hold
them, not in every day (history_reach).

A deleted run's references to blobs go with it; the blobs no remaining run references are
then deleted from the blob store by the sweep that follows a pass (blob_sweep.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from pg_pipeline.blobs import BlobStore, blob_store_from_env
from pg_pipeline.db import set_lock_timeout
from pg_pipeline.maintenance.blob_sweep import (
    BLOB_GRACE_S,
    SWEEP_PASS_S,
    SweepReport,
    sweep_blobs,
    swept,
)
from pg_pipeline.maintenance.vacuum import vacuum
from pg_pipeline.queries import Q
from pg_pipeline.wording import counted

log = logging.getLogger(__name__)

#: Finished jobs read per transaction; the runs deleted in it hold about as many jobs (a larger
#: run goes whole, alone).
PRUNE_BATCH = 1000
PRUNE_BATCH_MAX = 100_000  #: largest --batch: a batch is one transaction's worth of row locks
#: A sensible interval between a worker's prune passes, seconds: retention is counted in hours
#: or days, and a pass over nothing to delete costs one walk of the days that begin before the
#: cutoff (prune_walk_start), which reads the rest of the day that holds it (at 100 M, a million
#: jobs a day: 35 ms for 279,000 rows, 150-220 ms for 958,000); one whose walk meets a row reads
#: each day's index ends too (history_reach).
PRUNE_INTERVAL_S = 300.0
#: Jobs deleted in one pass from which the pass ends with a VACUUM of the tables it deleted from
#: (see prune_vacuum in sql/queries_admin.sql). Fewer are left to autovacuum: this table's is
#: set to come by at 1% dead rows, and 20,000 dead rows cost the claim nothing measurable.
PRUNE_VACUUM_AFTER = 10_000
#: How long the run-by-run pass rests after each batch, as a multiple of the time the batch
#: took: a sixth of the time deleting, five sixths giving the server's CPU back to the workers.
#: At full speed a pass of 700,000 jobs in a day that straddles the cutoff (100 M finished jobs,
#: a million a day) kept one core busy for 140-160 s and the drain beside it at 0.77-0.83x on
#: two cores (docs/measurements.md, 2026-12-03 (aa)); resting twice the batch's time (a third of
#: a core) it kept 0.82-0.86x of a control drain's rate in three pairs of four, five times (a
#: sixth) 0.95-1.18x, median 0.99, in four (2026-12-04 (ah)). Retention has hours, the workers
#: do not.
PRUNE_REST = 5.0
#: The longest rest after one batch, seconds: a worker stopping is kept waiting no longer.
PRUNE_REST_MAX_S = 2.0


@dataclass(frozen=True)
class PruneReport:
    """What one prune pass deleted."""

    jobs: int = 0  #: jobs deleted, run by run or with their day's partition
    outputs: int = 0  #: pipeline.outputs rows of the deleted jobs
    joins: int = 0  #: pipeline.joins rows of the deleted jobs' fan-outs
    batches: int = 0  #: transactions of the run-by-run pass
    vacuumed: bool = False  #: whether it ended with a VACUUM of every table (PRUNE_VACUUM_AFTER)
    partitions: int = 0  #: days of the history dropped whole, with the jobs they held
    kept: int = 0  #: rows of dropped days copied into job_history_kept (their runs live on)
    #: days of the history dropped that held no job (none finished that day, or none was left
    #: to delete in a day an earlier pass detached): every day is made ahead (migrate(), the
    #: Partitions service), whether a job finishes in it or not
    empty_partitions: int = 0
    runs: int = 0  #: runs deleted by the run-by-run pass
    #: tables its VACUUM passed over, their lock held (autovacuum, another pass): not vacuumed
    vacuum_skipped: tuple[str, ...] = ()
    #: the blob sweep that followed the pass (None: none did)
    blobs: SweepReport | None = None


def prune(
    conn: psycopg.Connection[Any],
    older_than_s: float,
    *,
    keep_failed: bool = False,
    batch: int = PRUNE_BATCH,
    vacuum_after: int | None = PRUNE_VACUUM_AFTER,
    stop: Callable[[], bool] | None = None,
    rest: float = PRUNE_REST,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = time.sleep,
) -> PruneReport:
    """Delete the finished runs whose every job finished more than `older_than_s` seconds ago,
    one transaction per `batch` rows read (a run larger than that goes whole, in its own batch).
    `keep_failed` keeps every run with a failed job whole, so that it can still be inspected
    and retried (its later stages need its outputs).
    A pass that deletes `vacuum_after` jobs or more (None: never) ends with a VACUUM of the
    tables. `stop`, asked between batches, ends the pass early (a worker shutting down).
    After each batch of the run-by-run pass it rests `rest` times as long as the batch took
    (PRUNE_REST; 0: none), so that workers draining beside it keep the server's CPU, by
    `sleep` (a stopping worker's event, which ends the rest early) and asks `stop` again.
    `conn` must be in autocommit mode (pg_pipeline.connect(), a pool's connections): each batch
    commits on its own, and the VACUUM that ends a large pass cannot run in a transaction.
    """
    [(cutoff,)] = conn.execute(Q["prune_cutoff"], {"older_than_s": older_than_s}).fetchall()
    days = _drop_days(conn, cutoff, keep_failed=keep_failed, stop=stop)
    jobs = outputs = joins = batches = runs_deleted = 0
    # After the days it dropped: a walk that meets no row has no run to delete, and the pass
    # ends there, without reading the history's days (pass_params) or running a batch. What is
    # left of the history is what its batches read, the first from the row met.
    first = conn.execute(Q["prune_walk_start"], {"cutoff": cutoff}).fetchone()
    params = {} if first is None else pass_params(conn, cutoff, keep_failed=keep_failed)
    after_id = 0 if first is None else first[0] - 1
    while first is not None:
        began = clock()
        with conn.transaction():
            conn.execute(Q["prune_lock"])
            [(more, next_id, runs, locked)] = conn.execute(
                Q["prune_lock_runs"], params | {"after_id": after_id, "batch": batch}
            ).fetchall()
            if runs:
                # A statement of its own: its snapshot is taken after the locks, so a retry
                # that committed before them is seen, and its run kept.
                [(deleted, deleted_outputs, deleted_joins, _keys)] = conn.execute(
                    Q["prune_runs"], params | {"runs": runs, "locked": locked}
                ).fetchall()
                jobs += deleted
                outputs += deleted_outputs
                joins += deleted_joins
                runs_deleted += len(runs)
        batches += 1
        if not more or (stop is not None and stop()):
            break
        after_id = next_id
        if rest > 0:
            sleep(min(rest * (clock() - began), PRUNE_REST_MAX_S))
            if stop is not None and stop():
                break
    # A dropped day leaves no dead rows behind: only the run-by-run deletes count.
    vacuumed = False
    skipped: tuple[str, ...] = ()
    if vacuum_after is not None and jobs >= vacuum_after:
        skipped = _vacuum(conn, cutoff)
        vacuumed = not skipped
    return PruneReport(
        jobs + days.jobs,
        outputs + days.outputs,
        joins + days.joins,
        batches,
        vacuumed,
        partitions=days.partitions,
        kept=days.kept,
        empty_partitions=days.empty_partitions,
        runs=runs_deleted,
        vacuum_skipped=skipped,
    )


@dataclass(frozen=True)
class HistoryDay:
    """A day of the history (a partition; the legacy one spans more days) as a pass finds it:
    its bounds, and the least id, least root id and greatest id of its rows (None: it has none)."""

    lower: datetime
    upper: datetime
    least_id: int | None
    least_root: int | None
    greatest_id: int | None


@dataclass(frozen=True)
class Reach:
    """What a pass's batches read of the history: the runs they may take, those up to
    `runs_upto`, and the finish times from `skip_from` until `skip_to` (equal: none), days
    that hold no job of those runs, left out of their statements (prune_lock_runs,
    prune_runs)."""

    runs_upto: int
    skip_from: datetime
    skip_to: datetime

    def params(self) -> dict[str, Any]:
        return {"runs_upto": self.runs_upto, "skip_from": self.skip_from, "skip_to": self.skip_to}


def pass_params(
    conn: psycopg.Connection[Any], cutoff: datetime, *, keep_failed: bool
) -> dict[str, Any]:
    """What every batch of a pass with `cutoff` gives both its statements (prune_lock_runs,
    prune_runs), read once, when the pass's days are dropped and its walk has met a row."""
    return {"cutoff": cutoff, "keep_failed": keep_failed} | history_reach(conn, cutoff).params()


def history_reach(conn: psycopg.Connection[Any], cutoff: datetime) -> Reach:
    """The days a pass with `cutoff` must read, from the history as it is now (see reach()).
    Read once a pass whose walk meets a row: three index descents a day (prune_history_days),
    108 days in 44-56 ms from a new connection, 15-27 ms in one that has read them before."""
    [(open_from, kept_greatest)] = conn.execute(Q["prune_history_horizon"]).fetchall()
    days = [HistoryDay(*row) for row in conn.execute(Q["prune_history_days"]).fetchall()]
    return reach(days, cutoff, open_from, kept_greatest)


def reach(
    days: list[HistoryDay], cutoff: datetime, open_from: datetime, kept_greatest: int | None
) -> Reach:
    """Which of `days` (oldest first) a pass's batches can leave out.

    The pass takes runs up to the greatest id its walk can meet when it begins: jobs finished
    before the cutoff are in the days that begin before it and among the kept rows
    (`kept_greatest`). A job's id and root id are its run's id or above it (a run's id is its
    root's, made before anything it led to), so a day whose least id and least root id are both
    above that greatest run holds no job of any run the pass takes, if it gets no row later: a
    day that ends at or before `open_from` (prune_history_horizon), by when every transaction
    that could still write into it had ended. Such days are left out, the longest stretch of
    them one after another: a plan leaves a day out by its partition key's range, one range a
    statement. A run met above `runs_upto` (its job finished before the cutoff after the pass
    began) is passed over and left to the next pass, which reads the days it is in."""
    upto = max([kept_greatest or 0, *(d.greatest_id or 0 for d in days if d.lower < cutoff)])

    def skippable(day: HistoryDay) -> bool:
        return (
            day.upper <= open_from
            and (day.least_id is None or day.least_id > upto)
            and (day.least_root is None or day.least_root > upto)
        )

    best: tuple[datetime, datetime] | None = None
    best_days = stretch = 0
    start: datetime | None = None
    previous: HistoryDay | None = None
    for day in days:
        if not skippable(day):
            start, stretch = None, 0
        elif start is not None and previous is not None and previous.upper == day.lower:
            stretch += 1
        else:
            start, stretch = day.lower, 1
        if start is not None and stretch > best_days:
            best, best_days = (start, day.upper), stretch
        previous = day
    skip_from, skip_to = best if best is not None else (cutoff, cutoff)
    return Reach(upto, skip_from, skip_to)


def _vacuum(conn: psycopg.Connection[Any], cutoff: datetime) -> tuple[str, ...]:
    """VACUUM the tables a pass deleted rows from, the history's days among them by name (see
    prune_vacuum_days); returns the tables it skipped, their lock held by another vacuum."""
    days = conn.execute(Q["prune_vacuum_days"], {"cutoff": cutoff}).fetchall()
    named = sql.SQL("").join(sql.SQL("{}, ").format(sql.Identifier(n, r)) for n, r in days)
    return vacuum(conn, sql.SQL(Q["prune_vacuum"]).format(days=named)).skipped


#: How long the detach of a day waits for its lock on the history (readers and finishing jobs
#: hold it briefly) before the day is left to the next pass, seconds: a lock request that waits
#: holds every later reader and writer of the history up behind it.
DETACH_LOCK_WAIT_S = 2.0


def _drop_days(
    conn: psycopg.Connection[Any],
    cutoff: datetime,
    *,
    keep_failed: bool,
    stop: Callable[[], bool] | None,
) -> PruneReport:
    """Drop the history's days wholly before `cutoff` (see the module's docstring); the report
    counts the jobs, outputs, joins, days (with jobs, and empty) and kept rows."""
    jobs = outputs = joins = partitions = kept = empty = 0
    # Each transaction under prune_lock, as the run-by-run batches: two passes at once take
    # turns, and the second finds a day the first took detached (NULL) or dropped (zeros).
    leftovers = [row[0] for row in conn.execute(Q["prune_detached"]).fetchall()]
    for part in leftovers:  # a day an earlier pass detached and did not drop
        with conn.transaction():
            conn.execute(Q["prune_lock"])
            [(j, o, jj, _keys)] = conn.execute(Q["prune_drop_partition"], {"part": part}).fetchall()
        jobs, outputs, joins = jobs + j, outputs + o, joins + jj
        # Its kept rows were copied, and counted, by the pass that detached it.
        if j:
            partitions += 1
        else:
            empty += 1
    for part, _upper in conn.execute(Q["prune_partitions"], {"cutoff": cutoff}).fetchall():
        if stop is not None and stop():
            break
        [(survivors,)] = conn.execute(
            Q["prune_partition_survivors"], {"part": part, "keep_failed": keep_failed}
        ).fetchall()
        if survivors is None:
            continue
        try:
            with conn.transaction():
                conn.execute(Q["prune_lock"])
                set_lock_timeout(conn, DETACH_LOCK_WAIT_S)
                [(copied,)] = conn.execute(
                    Q["prune_detach_partition"], {"part": part, "survivors": survivors}
                ).fetchall()
        except psycopg.errors.LockNotAvailable:
            # The lock is the whole history's (detach_history_partition takes it first): the
            # next day would wait as long for it, and fail as surely. A transaction left open
            # after writing to the history cost a pass 2 s a day, 3.5 min at 100 days.
            log.info(
                "retention: %s and the days after it left to the next pass: the history's lock"
                " was not free (a transaction holds it)",
                part,
            )
            break
        if copied is None:
            continue
        with conn.transaction():
            conn.execute(Q["prune_lock"])
            [(j, o, jj, _keys)] = conn.execute(Q["prune_drop_partition"], {"part": part}).fetchall()
        jobs, outputs, joins = jobs + j, outputs + o, joins + jj
        kept += int(copied)
        if j or copied:
            partitions += 1
        else:
            empty += 1
    return PruneReport(
        jobs, outputs, joins, partitions=partitions, kept=kept, empty_partitions=empty
    )


@dataclass
class Pruner:
    """The worker's retention service (`pipeline worker --retention`): prune() every pass.
    Passes of several workers take turns batch by batch (prune_lock), so running one in every
    worker is harmless."""

    pool: ConnectionPool
    older_than_s: float
    keep_failed: bool = False
    batch: int = PRUNE_BATCH
    #: asked between batches: True ends the pass (the worker is stopping)
    stop: Callable[[], bool] | None = None
    #: seconds a blob no run references is kept after its last write or put (blob_sweep.py)
    blob_grace_s: float = BLOB_GRACE_S
    #: the store the sweep deletes blobs from
    blob_store: Callable[[], BlobStore] = blob_store_from_env
    #: seconds each pass sweeps at most (blob_sweep.py); None: until no candidate is left
    sweep_budget_s: float | None = SWEEP_PASS_S
    #: the run-by-run pass's rest after each batch, in multiples of the batch's time
    rest: float = PRUNE_REST
    #: how a rest is taken: a worker's halt event's wait, which a stopping worker ends at once
    sleep: Callable[[float], object] = time.sleep

    def run_once(self) -> PruneReport:
        with self.pool.connection() as conn:
            report = prune(
                conn,
                self.older_than_s,
                keep_failed=self.keep_failed,
                batch=self.batch,
                stop=self.stop,
                rest=self.rest,
                sleep=self.sleep,
            )
            report = replace(report, blobs=self.sweep(conn))
        if report.jobs or report.partitions or report.empty_partitions:
            log.info("pruned finished jobs older than %.0f s: %s", self.older_than_s, said(report))
        elif report.blobs is not None and (report.blobs.deleted or report.blobs.out_of_time):
            log.info("retention: %s", swept(report.blobs))
        return report

    def sweep(self, conn: psycopg.Connection[Any]) -> SweepReport:
        """The blob sweep after a pass. The store's failures are logged, never raised: it is
        asked again next pass, and the pass's deletions stand."""
        report = sweep_blobs(
            conn,
            self.blob_store,
            grace_s=self.blob_grace_s,
            stop=self.stop,
            budget_s=self.sweep_budget_s,
        )
        if report.error:
            log.warning("retention: %s", swept(report))
        return report


def said(report: PruneReport) -> str:
    """What a pass did, as `pipeline prune` and the worker's log say it: only what was done."""
    their = "its" if report.partitions == 1 else "their"
    # The empty days apart: "3 days of history dropped whole" for a day of jobs and two days
    # ahead that no job came to would overstate what went.
    empty = (
        f"; {counted(report.empty_partitions, 'empty day')} dropped"
        if report.empty_partitions
        else ""
    )
    # No batch: the walk met no finished job past the cutoff, so no run was left to delete;
    # "0 runs deleted one by one in 0 batches" said so awkwardly.
    one_by_one = (
        f"{counted(report.runs, 'run')} deleted one by one in"
        f" {counted(report.batches, 'batch', 'batches')}"
        if report.batches
        else "no run left to delete one by one"
    )
    text = (
        f"deleted {counted(report.jobs, 'finished job')}, {counted(report.outputs, 'output')}"
        f" and {counted(report.joins, 'join')} ({counted(report.partitions, 'day')} of history"
        f" dropped whole, {report.kept} of {their} rows kept for runs still going{empty};"
        f" {one_by_one})"
    )
    if report.vacuum_skipped:
        # The rest of its VACUUM ran: what it passed over is said, not "vacuumed".
        text += f", not vacuumed whole: {'; '.join(report.vacuum_skipped)}"
    else:
        text += ", then vacuumed" if report.vacuumed else ""
    return text if report.blobs is None else f"{text}; {swept(report.blobs)}"
