"""The scheduler: enqueues the jobs of due recurring schedules.

Every worker runs one; there is no leader. A tick locks due rows FOR UPDATE SKIP LOCKED and, in
the same transaction, inserts each fire time's job under a unique dedup key and advances the
row, so schedulers ticking at once enqueue exactly one job per fire time (see
sql/queries_schedules.sql for why that key).

Missed fire times (every scheduler was down past one or more of them) follow the schedule's
catch_up: the latest `catch_up` of them are enqueued, oldest first, each with its own fire time
as run_after; the older ones are skipped. The default, 1, runs the latest missed one once and
then resumes the normal rhythm.

Each row fires in a savepoint of its own, and whatever goes wrong with one row stays with it:
the others fire. What goes wrong may be this worker's alone: during a rolling deploy an old
worker cannot validate a payload written for the new stage model, and a worker with older
tzdata or cronsim cannot read a newer timezone or expression. Such a row is left due, for
another worker to fire, for LEAVE_FOR_OTHERS_S from when this worker found it due (the reason
is noted on the row meanwhile); after that it is skipped to its next fire time, with the
reason. A job the database refuses is the same on every worker: that fire time is skipped at
once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pg_pipeline.db import outage
from pg_pipeline.enqueue import JobRequest, insert_row, job_row
from pg_pipeline.schedules import (
    DueSchedule,
    advance,
    any_due,
    fire_key,
    note_error,
    take_due,
)
from pg_pipeline.stage import REGISTRY, Registry

log = logging.getLogger(__name__)

SCHEDULE_BATCH = 100  #: due schedules locked and fired per transaction
#: Seconds after its fire time that a row this worker cannot fire stays due for another worker
#: (one with the stage's newer model, newer tzdata): longer than a rolling deploy takes to bring
#: one up, short enough that a row no worker can fire says why within minutes.
LEAVE_FOR_OTHERS_S = 300.0


@dataclass(frozen=True)
class Fired:
    """A job a scheduler enqueued for one fire time of one schedule."""

    schedule: str
    fire_at: datetime
    job_id: int


@dataclass
class Scheduler:
    """Fires due schedules whose stage `registry` knows (it validates their payloads)."""

    pool: ConnectionPool
    registry: Registry = field(default=REGISTRY)
    batch: int = SCHEDULE_BATCH
    leave_for_others_s: float = LEAVE_FOR_OTHERS_S
    #: When this scheduler first found each (schedule, fire time) it could not fire
    _first_seen: dict[tuple[str, datetime], datetime] = field(
        default_factory=dict, init=False, repr=False
    )

    def run_once(self, now: datetime | None = None) -> list[Fired]:
        """One tick: every due schedule fired and advanced, but those left for another worker.
        `now` stands in for the database's clock (tests); returns the jobs this tick enqueued,
        none for a fire time whose job already existed."""
        if now is not None and now.tzinfo is None:
            raise ValueError("now must be timezone-aware")
        stages = self.registry.names()
        fired: list[Fired] = []
        if not stages:
            return fired
        left: list[str] = []
        with self.pool.connection() as conn:
            # Nearly every tick finds nothing due: then one round trip, not a transaction's
            # three (BEGIN, the locking read, COMMIT). Every worker ticks every second, and
            # with sixteen worker processes on two cores each round trip wakes a thread that
            # waits for a core (benchmarks/FLEET.md).
            if not any_due(conn, stages, now):
                return fired
            while True:
                with conn.transaction():
                    due = take_due(conn, stages, self.batch, now, left=left)
                    for row in due:
                        fired.extend(self._fire_apart(conn, row, left))
                if len(due) < self.batch:
                    break
        return fired

    def _fire_apart(
        self, conn: psycopg.Connection[Any], row: DueSchedule, left: list[str]
    ) -> list[Fired]:
        """Fire one row in a savepoint, so that whatever fails with it (a job the database
        refuses, a payload, timezone or cron expression this worker cannot read) rolls back
        that row alone and is recorded on it, instead of failing every tick of every schedule
        behind it. An outage still ends the tick."""
        try:
            with conn.transaction():
                return self._fire(conn, row)
        except psycopg.Error as exc:
            if outage(exc):
                raise
            reason = " ".join(str(exc).split()) or type(exc).__name__
            log.error("schedule %s: the database refused its job: %s", row.name, reason)
            self._skip(conn, row, f"the database refused the job: {reason}")
        except Exception as exc:  # this worker cannot fire it; another may
            self._cannot_fire(conn, row, exc, left)
        return []

    def _cannot_fire(
        self, conn: psycopg.Connection[Any], row: DueSchedule, exc: Exception, left: list[str]
    ) -> None:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        key = (row.name, row.next_fire_at)
        # Counted from when this worker first found the fire time due, not from the fire time:
        # after an outage, the first worker back may be an old one, and the new ones still get
        # their time.
        first_seen = self._first_seen.get(key)
        if first_seen is None:
            self._forget_before(row.now - timedelta(seconds=2 * self.leave_for_others_s))
            first_seen = self._first_seen[key] = row.now
        until = first_seen + timedelta(seconds=self.leave_for_others_s)
        if row.now < until:
            left.append(row.name)
            # One text for every worker and tick, so that the note is written once.
            note_error(
                conn,
                row.name,
                f"a worker could not fire it, so it stays due for up to "
                f"{self.leave_for_others_s:g} s for another worker: {reason}",
            )
            if first_seen == row.now:
                log.warning(
                    "schedule %s: cannot fire it here; left for another worker until %s: %s",
                    row.name,
                    until.isoformat(),
                    reason,
                )
            return
        del self._first_seen[key]
        log.error(
            "schedule %s: no worker fired %s within %g s; skipped it: %s",
            row.name,
            row.next_fire_at.isoformat(),
            self.leave_for_others_s,
            reason,
        )
        self._skip(
            conn,
            row,
            f"no worker could fire it within {self.leave_for_others_s:g} s, so its fire time "
            f"{row.next_fire_at.isoformat()} was skipped: {reason}",
        )

    def _forget_before(self, moment: datetime) -> None:
        """Drop fire times first seen before `moment`: another worker fired them long ago."""
        for key in [k for k, seen in self._first_seen.items() if seen < moment]:
            del self._first_seen[key]

    def _skip(self, conn: psycopg.Connection[Any], row: DueSchedule, error: str) -> None:
        """Move the row on, past its due fire times, saying why they enqueued nothing. To its
        next fire time after this tick; when its timing cannot be read here, to a fresh try
        after leave_for_others_s."""
        try:
            following = row.timing.due(row.next_fire_at, row.now, 0)[1]
        except Exception:  # any reason: the row must move on
            following = row.now + timedelta(seconds=self.leave_for_others_s)
        advance(conn, row.name, following, fired_at=None, job_id=None, error=error)

    def _fire(self, conn: psycopg.Connection[Any], row: DueSchedule) -> list[Fired]:
        times, following = row.timing.due(row.next_fire_at, row.now, row.catch_up)
        if times and times[0] != row.next_fire_at:
            log.warning(
                "schedule %s: no scheduler ran since its fire time %s; enqueueing the latest %d "
                "missed fire time(s) (catch-up %d) and skipping the older ones",
                row.name,
                row.next_fire_at.isoformat(),
                len(times),
                row.catch_up,
            )
        fired: list[Fired] = []
        for fire_at in times:
            request = JobRequest(
                row.stage,
                row.payload,
                tenant_id=row.tenant_id,
                run_after=fire_at,
                dedup_key=fire_key(row.name, fire_at),
            )
            # A payload this worker's model refuses raises here, before anything is inserted.
            job_id, new = insert_row(conn, job_row(request, self.registry))
            if new:
                fired.append(Fired(row.name, fire_at, job_id))
        advance(
            conn,
            row.name,
            following,
            fired_at=fired[-1].fire_at if fired else None,
            job_id=fired[-1].job_id if fired else None,
            error=None,
        )
        self._first_seen.pop((row.name, row.next_fire_at), None)
        for job in fired:
            log.info("schedule %s fired for %s: job %s", job.schedule, job.fire_at, job.job_id)
        return fired
