"""Retention: finished runs older than a cutoff are deleted, with their outputs and joins.

A run (a root job and everything it led to) is deleted only once all of it is finished and
past the cutoff, never while any of its jobs is queued or running: a live run still reads its
earlier stages' outputs and counts its fan-outs' joins. A run goes whole, in one transaction,
with every one of its jobs locked first: a retry (or any other change to one of its jobs) at the
same moment either comes first, and the run stays, or waits and finds the run gone; it never
finds half a run. Batches are short transactions, so a prune of millions of rows never holds
locks or one long snapshot (which would keep vacuum from cleaning up after the claims) for long.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pipeline.queries import Q

log = logging.getLogger(__name__)

#: Finished jobs read per transaction; the runs deleted in it hold about as many jobs (a larger
#: run goes whole, alone).
PRUNE_BATCH = 1000
PRUNE_BATCH_MAX = 100_000  #: largest --batch: a batch is one transaction's worth of row locks
#: A sensible interval between a worker's prune passes, seconds: retention is counted in hours
#: or days, and a pass over nothing to delete costs one index probe.
PRUNE_INTERVAL_S = 300.0
#: Jobs deleted in one pass from which the pass ends with a VACUUM of the tables it deleted from
#: (see prune_vacuum in sql/queries_admin.sql). Fewer are left to autovacuum: this table's is
#: set to come by at 1% dead rows, and 20,000 dead rows cost the claim nothing measurable.
PRUNE_VACUUM_AFTER = 10_000

#: Before every finished row: the keyset cursor of a pass's first batch.
_START = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class PruneReport:
    """What one prune pass deleted."""

    jobs: int = 0
    outputs: int = 0  #: pipeline.outputs rows of the deleted jobs
    joins: int = 0  #: pipeline.joins rows of the deleted jobs' fan-outs
    batches: int = 0  #: transactions it took
    vacuumed: bool = False  #: whether it ended with a VACUUM (PRUNE_VACUUM_AFTER)


def prune(
    conn: psycopg.Connection[Any],
    older_than_s: float,
    *,
    keep_failed: bool = False,
    batch: int = PRUNE_BATCH,
    vacuum_after: int | None = PRUNE_VACUUM_AFTER,
    stop: Callable[[], bool] | None = None,
) -> PruneReport:
    """Delete the finished runs whose every job finished more than `older_than_s` seconds ago,
    one transaction per `batch` rows read (a run larger than that goes whole, in its own batch).
    `keep_failed` keeps every run with a failed job whole, so that it can still be inspected
    and retried (its later stages need its outputs).
    A pass that deletes `vacuum_after` jobs or more (None: never) ends with a VACUUM of the
    tables. `stop`, asked between batches, ends the pass early (a worker shutting down).
    `conn` must be in autocommit mode (pipeline.connect(), a pool's connections): each batch
    commits on its own, and the VACUUM that ends a large pass cannot run in a transaction.
    """
    [(cutoff,)] = conn.execute(Q["prune_cutoff"], {"older_than_s": older_than_s}).fetchall()
    after_at, after_id = _START, 0
    jobs = outputs = joins = batches = 0
    while True:
        with conn.transaction():
            conn.execute(Q["prune_lock"])
            params = {"cutoff": cutoff, "keep_failed": keep_failed}
            [(more, next_at, next_id, runs, locked)] = conn.execute(
                Q["prune_lock_runs"],
                params | {"after_at": after_at, "after_id": after_id, "batch": batch},
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
        batches += 1
        if not more or (stop is not None and stop()):
            break
        after_at, after_id = next_at, next_id
    vacuumed = vacuum_after is not None and jobs >= vacuum_after
    if vacuumed:
        conn.execute(Q["prune_vacuum"])
    return PruneReport(jobs, outputs, joins, batches, vacuumed)


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

    def run_once(self) -> PruneReport:
        with self.pool.connection() as conn:
            report = prune(
                conn,
                self.older_than_s,
                keep_failed=self.keep_failed,
                batch=self.batch,
                stop=self.stop,
            )
        if report.jobs:
            log.info(
                "pruned %d finished jobs older than %.0f s (%d outputs, %d joins)",
                report.jobs,
                self.older_than_s,
                report.outputs,
                report.joins,
            )
        return report
