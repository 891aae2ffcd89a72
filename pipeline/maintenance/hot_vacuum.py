"""The hot table vacuumed by the workers themselves when its dead rows pile up.

pipeline.active_jobs holds only queued and running jobs, and every job leaves two dead row
versions in it: the queued row its claim replaced and the running row its completion deleted
(neither change is heap-only: status is in the indexes' predicates). At 20,000 jobs/s that is
40,000 dead rows a second, and autovacuum visits a database at most once per
autovacuum_naptime (a minute unless the server says otherwise, a setting no application may
change on a shared server): between two of its passes the table gathered 1.5-3 M dead rows,
its heap grew to 400-620 MB for 20,000 live jobs, and the drain slowed with the dead rows
(docs/measurements.md). The table's own autovacuum settings (sql/schema.sql) cannot beat the
naptime.

So every worker looks at the table's counts every few seconds (the statistics: no read of the
table) and vacuums it once its dead rows pass a threshold. Leaderless: SKIP_LOCKED makes a
second worker deciding at the same moment, or one that meets autovacuum at work, pass the table
over at once. A role that may not vacuum the table (not its owner, nor from PostgreSQL 17
granted MAINTAIN) is told once, and the worker leaves the table to autovacuum for its life.

A vacuum removes only the rows that died before the oldest snapshot still open: while a long
transaction holds them (a pg_dump, an idle session in a transaction), a vacuum leaves them
where they are and the count stays over the threshold. A worker whose vacuum left most of what
it found says so (once, until one removes them) and waits HELD_BACK_S before its next:
vacuuming again every round would read the whole table every few seconds for nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pg_pipeline.maintenance.vacuum import vacuum
from pg_pipeline.queries import Q
from pg_pipeline.settings import HOT_VACUUM_DEAD_ROWS

log = logging.getLogger(__name__)

#: Seconds between two rounds of a worker, before the maintainer's jitter. A round that finds
#: nothing to do is one statement reading shared memory; every worker runs one, so the table
#: is looked at more often the more workers there are. Two workers draining 31,000 jobs/s made
#: 62,000 dead rows a second: at 100,000 they vacuumed every 3 s.
HOT_VACUUM_INTERVAL_S = 2.0
#: Dead rows per live row from which it vacuums, when that is more: a vacuum reads the whole
#: table and its indexes, so a large backlog is vacuumed when its dead rows are as many as its
#: live ones, not every HOT_VACUUM_DEAD_ROWS.
HOT_VACUUM_PER_LIVE = 1.0
#: Seconds a worker waits after a vacuum that could not remove most of the dead rows it found
#: (a snapshot older than they are holds them): autovacuum's own default period.
HELD_BACK_S = 60.0


@dataclass(frozen=True)
class HotTable:
    """The hot table as the statistics see it."""

    dead: int  #: dead row versions, not yet vacuumed away
    live: int  #: live rows: the queued, waiting and running jobs
    vacuuming: bool  #: a vacuum of it runs now (as far as this role may see)


def threshold(live: int, dead_rows: int, per_live: float = HOT_VACUUM_PER_LIVE) -> int:
    """The dead rows past which the table is vacuumed: `dead_rows`, or `per_live` per live row
    when that is more."""
    return max(dead_rows, int(per_live * live))


def due(table: HotTable, dead_rows: int, per_live: float = HOT_VACUUM_PER_LIVE) -> bool:
    """Whether a vacuum of `table` is worth its read of the table now."""
    return not table.vacuuming and table.dead > threshold(table.live, dead_rows, per_live)


def removed_little(found: int, left: int, limit: int) -> bool:
    """Whether a vacuum that found `found` dead rows and left `left` was kept from them (a
    snapshot older than they are): it left most of them, and still more than the threshold
    `limit`. Rows that died while it ran are left too, as many as a second or two of a drain
    makes: not most of a threshold's worth."""
    return left > found // 2 and left > limit


@dataclass(frozen=True)
class Round:
    """What one round found and did."""

    #: None: the round read nothing, a check having found that this worker may not vacuum it
    table: HotTable | None
    vacuumed: bool = False  #: it ran a VACUUM that vacuumed the table
    skipped: bool = False  #: its VACUUM passed the table over: another vacuum held it
    left: int | None = None  #: the dead rows the statistics counted right after its VACUUM


@dataclass
class HotVacuum:
    """One worker's hot-table vacuum: run_once() every HOT_VACUUM_INTERVAL_S or so."""

    pool: ConnectionPool
    dead_rows: int = HOT_VACUUM_DEAD_ROWS
    per_live: float = HOT_VACUUM_PER_LIVE
    clock: Callable[[], float] = time.monotonic
    #: set once a check found that this worker's role may not vacuum the table: no more rounds
    refused: bool = False
    _allowed: bool = False  #: the privilege check passed (it runs before the first VACUUM)
    _held_until: float = 0.0  #: after a vacuum that removed little, no other before this
    _held: bool = False  #: the last vacuum removed little (and the log said why)

    def run_once(self) -> Round:
        if self.refused:
            return Round(None)
        with self.pool.connection() as conn:
            table = _read(conn)
            if not due(table, self.dead_rows, self.per_live) or self.clock() < self._held_until:
                return Round(table)
            if not self._allowed and not self._check(conn):
                return Round(table)
            began = self.clock()
            said = vacuum(conn, Q["hot_vacuum"])
            if said.warned:
                return self._refused_by(said.warned[0], table)
            if said.skipped:
                return Round(table, skipped=True)
            left = _read(conn).dead
        took = self.clock() - began
        log.debug(
            "vacuumed pipeline.active_jobs in %.2f s: %d dead rows (%d live), %d left",
            took,
            table.dead,
            table.live,
            left,
        )
        if not removed_little(
            table.dead, left, threshold(table.live, self.dead_rows, self.per_live)
        ):
            self._held = False
            return Round(table, vacuumed=True, left=left)
        self._held_until = self.clock() + HELD_BACK_S
        if not self._held:  # once while it lasts: every minute would say nothing new
            self._held = True
            log.info(
                "the vacuum of pipeline.active_jobs left %d of its %d dead rows: a transaction "
                "older than they are still sees them (pg_stat_activity's oldest backend_xmin, "
                "or a replication slot's xmin); this worker vacuums it once every %.0f s until "
                "a vacuum removes them",
                left,
                table.dead,
                HELD_BACK_S,
            )
        return Round(table, vacuumed=True, left=left)

    def _refused_by(self, warning: str, table: HotTable) -> Round:
        """VACUUM warned, other than of a held lock: PostgreSQL passed the table over for a
        reason the check did not foresee (a privilege rule of a later version: its warning
        carries no SQLSTATE of its own). Said once; the table is left to autovacuum."""
        self.refused = True
        log.warning(
            "this worker no longer vacuums pipeline.active_jobs: its VACUUM said %r; "
            "autovacuum alone cleans the table up",
            warning,
        )
        return Round(table)

    def _check(self, conn: psycopg.Connection[Any]) -> bool:
        """Whether this worker's role may vacuum the table; if not, say so once and stop."""
        row = conn.execute(Q["hot_vacuum_allowed"]).fetchone()
        if row is not None and row[0]:
            self._allowed = True
            return True
        self.refused = True
        log.warning(
            "this worker does not vacuum pipeline.active_jobs when its dead rows pile up, as it "
            "would to keep a fast drain fast: its role %r neither owns the table nor, from "
            "PostgreSQL 17, holds MAINTAIN on it (GRANT MAINTAIN ON TABLE pipeline.active_jobs "
            "TO the role); autovacuum alone cleans it up, at most once per autovacuum_naptime",
            conn.info.user,
        )
        return False


def _read(conn: psycopg.Connection[Any]) -> HotTable:
    row = conn.execute(Q["hot_vacuum_stats"]).fetchone()
    assert row is not None  # one row: the table's
    return HotTable(dead=int(row[0]), live=int(row[1]), vacuuming=bool(row[2]))
