"""The scheduler: enqueues the jobs of due recurring schedules.

Every worker runs one; there is no leader. A tick locks due rows FOR UPDATE SKIP LOCKED and, in
the same transaction, inserts each fire time's job under a unique dedup key and advances the
row, so schedulers ticking at once enqueue exactly one job per fire time (see
sql/queries_schedules.sql for why that key).

Missed fire times (every scheduler was down past one or more of them) follow the schedule's
catch_up: the latest `catch_up` of them are enqueued, oldest first, each with its own fire time
as run_after; the older ones are skipped. The default, 1, runs the latest missed one once and
then resumes the normal rhythm.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from pipeline.db import DB_DOWN
from pipeline.enqueue import JobRequest, insert_row, job_row
from pipeline.errors import InvalidPayload, UnknownStage
from pipeline.schedules import DueSchedule, advance, fire_key, take_due
from pipeline.stage import REGISTRY, Registry
from pipeline.validation import InvalidJob

log = logging.getLogger(__name__)

SCHEDULE_BATCH = 100  #: due schedules locked and fired per transaction


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

    def run_once(self, now: datetime | None = None) -> list[Fired]:
        """One tick: every due schedule fired and advanced. `now` stands in for the database's
        clock (tests); returns the jobs this tick enqueued, none for a fire time whose job
        already existed."""
        if now is not None and now.tzinfo is None:
            raise ValueError("now must be timezone-aware")
        stages = self.registry.names()
        fired: list[Fired] = []
        if not stages:
            return fired
        with self.pool.connection() as conn:
            while True:
                with conn.transaction():
                    due = take_due(conn, stages, self.batch, now)
                    for row in due:
                        fired.extend(self._fire_apart(conn, row))
                if len(due) < self.batch:
                    break
        return fired

    def _fire_apart(self, conn: psycopg.Connection[Any], row: DueSchedule) -> list[Fired]:
        """Fire one row in a savepoint: a job the database refuses (a trigger of the user's, a
        constraint) skips that schedule's fire time, with the reason, instead of failing every
        tick of every schedule behind it. An outage still ends the tick."""
        try:
            with conn.transaction():
                return self._fire(conn, row)
        except DB_DOWN:
            raise
        except psycopg.DatabaseError as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            log.error("schedule %s: the database refused its job: %s", row.name, reason)
            _, following = row.timing.due(row.next_fire_at, row.now, 0)
            advance(
                conn,
                row.name,
                following,
                fired_at=None,
                job_id=None,
                error=f"the database refused the job: {reason}",
            )
            return []

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
        error: str | None = None
        for fire_at in times:
            request = JobRequest(
                row.stage,
                row.payload,
                tenant_id=row.tenant_id,
                run_after=fire_at,
                dedup_key=fire_key(row.name, fire_at),
            )
            try:
                values = job_row(request, self.registry)
            except (InvalidPayload, InvalidJob, UnknownStage) as exc:
                # The stage's model changed under a stored payload. Skipping the fire time keeps
                # the schedule from failing every tick; the reason shows in `schedule list`.
                error = str(exc)
                log.error("schedule %s skipped its fire at %s: %s", row.name, fire_at, error)
                continue
            job_id, new = insert_row(conn, values)
            if new:
                fired.append(Fired(row.name, fire_at, job_id))
        advance(
            conn,
            row.name,
            following,
            fired_at=fired[-1].fire_at if fired else None,
            job_id=fired[-1].job_id if fired else None,
            error=error,
        )
        for job in fired:
            log.info("schedule %s fired for %s: job %s", job.schedule, job.fire_at, job.job_id)
        return fired
