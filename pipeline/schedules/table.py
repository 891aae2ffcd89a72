"""The table `pipeline.schedules`: the one home of its SQL. Code's schedules synced to it, the
CLI's saved, listed, paused, resumed and removed, and due rows taken and advanced by the
scheduler (pipeline/maintenance/scheduler.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import psycopg
from psycopg.types.json import Jsonb

from pg_pipeline.errors import PipelineError
from pg_pipeline.queries import Q
from pg_pipeline.schedules.declarations import SCHEDULES, Schedule, ScheduleRegistry
from pg_pipeline.schedules.timing import Timing, utc
from pg_pipeline.stage import REGISTRY, Registry

Source = Literal["code", "cli"]


class ScheduleOwnedByCode(PipelineError):
    """`pipeline schedule add` named a schedule that code declares: the next worker to start
    would overwrite the change, so it is refused."""


@dataclass(frozen=True)
class ScheduleRow:
    """A row of pipeline.schedules, as `pipeline schedule list` shows it."""

    name: str
    stage: str
    timing: Timing
    payload: Any
    tenant_id: str | None
    catch_up: int
    source: Source
    paused: bool
    next_fire_at: datetime
    last_fired_at: datetime | None
    last_job_id: int | None
    last_error: str | None


@dataclass(frozen=True)
class DueSchedule:
    """A due row, locked by the scheduler's transaction until it is advanced."""

    name: str
    stage: str
    timing: Timing
    payload: Any
    tenant_id: str | None
    catch_up: int
    next_fire_at: datetime
    now: datetime  # the clock this tick reads, the same for every row of it


@dataclass(frozen=True)
class SyncResult:
    upserted: list[str]
    removed: list[str]


def clock(conn: psycopg.Connection[Any], now: datetime | None = None) -> datetime:
    """`now` if given (tests), else the database's clock: every scheduler reads the same one,
    so a worker whose own clock runs fast cannot fire a schedule early."""
    if now is not None:
        if now.tzinfo is None:
            raise ValueError("now must be timezone-aware")
        return utc(now)
    row = conn.execute(Q["schedule_clock"]).fetchone()
    assert row is not None
    return utc(row[0])


def _params(item: Schedule, source: Source, next_fire_at: datetime) -> dict[str, Any]:
    return {
        "name": item.name,
        "stage": item.stage,
        "cron": item.timing.cron,
        "every_s": item.timing.every_s,
        "timezone": item.timing.timezone,
        "payload": Jsonb(item.payload),
        "tenant_id": item.tenant_id,
        "catch_up": item.catch_up,
        "source": source,
        "next_fire_at": next_fire_at,
    }


def save_schedule(
    conn: psycopg.Connection[Any], item: Schedule, *, now: datetime | None = None
) -> tuple[bool, datetime]:
    """Add or replace a CLI schedule: (True when it is new, its next fire time).
    ScheduleOwnedByCode, and nothing written, when code declares a schedule of that name."""
    with conn.transaction():
        at = clock(conn, now)
        row = conn.execute(
            Q["schedule_upsert"], _params(item, "cli", item.timing.first_after(at))
        ).fetchone()
    if row is None:
        raise ScheduleOwnedByCode(
            f"schedule {item.name!r} is declared in code: change it there, or pause it with "
            f"`pipeline schedule pause {item.name}`"
        )
    return bool(row[0]), utc(row[1])


def sync_schedules(
    conn: psycopg.Connection[Any],
    registry: ScheduleRegistry | None = None,
    *,
    stages: Registry | None = None,
    now: datetime | None = None,
) -> SyncResult:
    """Write the code's schedules to the database, in one transaction; a worker calls it when
    it starts.

    Each declared schedule is upserted with source 'code' (taking over a CLI one of the same
    name). One whose timing (cron, period, timezone) is unchanged keeps its next fire time, so a
    restart neither skips nor repeats a fire; a paused one stays paused, since pausing is the
    operator's call. A 'code' row the code no longer declares is deleted, but only when its
    stage is one this code knows: a worker of another app, sharing the database, does not
    delete that app's schedules. CLI schedules are never touched.

    Raises UnknownStage or InvalidPayload, writing nothing, if a declaration does not fit its
    stage.
    """
    declared = list(registry if registry is not None else SCHEDULES)
    known = stages if stages is not None else REGISTRY
    for item in declared:
        item.check(known)
    with conn.transaction():
        # Two workers starting with different code must not interleave their upserts and
        # deletes (a deadlock, or an old worker re-adding what a new one just removed halfway).
        conn.execute(Q["schedule_sync_lock"])
        at = clock(conn, now)
        for item in declared:
            conn.execute(Q["schedule_upsert"], _params(item, "code", item.timing.first_after(at)))
        removed = conn.execute(
            Q["schedule_prune_code"],
            {"names": [s.name for s in declared], "stages": known.names()},
        ).fetchall()
    return SyncResult([s.name for s in declared], sorted(str(r[0]) for r in removed))


def _timing(cron: str | None, every_s: float | None, timezone: str) -> Timing:
    return Timing(cron=cron, every_s=every_s, timezone=timezone)


def list_schedules(conn: psycopg.Connection[Any]) -> list[ScheduleRow]:
    rows = conn.execute(Q["schedule_list"]).fetchall()
    return [
        ScheduleRow(
            name=name,
            stage=stage,
            timing=_timing(cron, every_s, timezone),
            payload=payload,
            tenant_id=tenant_id,
            catch_up=catch_up,
            source=source,
            paused=paused,
            next_fire_at=next_fire_at,
            last_fired_at=last_fired_at,
            last_job_id=last_job_id,
            last_error=last_error,
        )
        for (
            name,
            stage,
            cron,
            every_s,
            timezone,
            payload,
            tenant_id,
            catch_up,
            source,
            paused,
            next_fire_at,
            last_fired_at,
            last_job_id,
            last_error,
        ) in rows
    ]


def remove_schedule(conn: psycopg.Connection[Any], name: str) -> Source | None:
    """Delete a schedule; its source, or None when there was none of that name."""
    row = conn.execute(Q["schedule_remove"], {"name": name}).fetchone()
    return None if row is None else row[0]


def pause_schedule(conn: psycopg.Connection[Any], name: str) -> bool:
    """Stop firing until resumed; False when there is no such schedule."""
    return conn.execute(Q["schedule_pause"], {"name": name}).fetchone() is not None


def resume_schedule(
    conn: psycopg.Connection[Any], name: str, *, now: datetime | None = None
) -> datetime | None:
    """Fire again from the first fire time after now: times that passed during the pause are
    skipped, not caught up (pausing meant "do not run these"). Returns the next fire time, or
    None when there is no such schedule. Resuming a running schedule changes nothing."""
    with conn.transaction():
        row = conn.execute(Q["schedule_lock"], {"name": name}).fetchone()
        if row is None:
            return None
        cron, every_s, timezone, paused, next_fire_at = row
        if not paused:
            return utc(next_fire_at)
        at = clock(conn, now)
        _, following = _timing(cron, every_s, timezone).due(utc(next_fire_at), at, 0)
        conn.execute(Q["schedule_resume"], {"name": name, "next_fire_at": following})
    return following


def any_due(conn: psycopg.Connection[Any], stages: list[str], now: datetime | None) -> bool:
    """Whether some unpaused schedule of `stages` is due, in one statement: call it outside a
    transaction, before opening the one that takes them (take_due)."""
    row = conn.execute(Q["schedule_any_due"], {"now": now, "stages": stages}).fetchone()
    return row is not None and bool(row[0])


def take_due(
    conn: psycopg.Connection[Any],
    stages: list[str],
    limit: int,
    now: datetime | None,
    *,
    left: Sequence[str] = (),
) -> list[DueSchedule]:
    """Lock up to `limit` due, unpaused schedules of `stages`, but none named in `left` (SKIP
    LOCKED: rows another scheduler holds are left to it). Call inside the transaction that
    advances them."""
    rows = conn.execute(
        Q["schedule_due"], {"now": now, "stages": stages, "limit": limit, "left": list(left)}
    ).fetchall()
    return [
        DueSchedule(
            name=name,
            stage=stage,
            timing=_timing(cron, every_s, timezone),
            payload=payload,
            tenant_id=tenant_id,
            catch_up=catch_up,
            next_fire_at=utc(next_fire_at),
            now=utc(at),
        )
        for (
            name,
            stage,
            cron,
            every_s,
            timezone,
            payload,
            tenant_id,
            catch_up,
            next_fire_at,
            at,
        ) in rows
    ]


def note_error(conn: psycopg.Connection[Any], name: str, error: str) -> None:
    """Say on a locked due row why it was left unfired, leaving its fire time as it is."""
    conn.execute(Q["schedule_note"], {"name": name, "error": error})


def advance(
    conn: psycopg.Connection[Any],
    name: str,
    next_fire_at: datetime,
    *,
    fired_at: datetime | None,
    job_id: int | None,
    error: str | None,
) -> None:
    """Move a locked due row on to its next fire time, recording what this tick did."""
    conn.execute(
        Q["schedule_advance"],
        {
            "name": name,
            "next_fire_at": next_fire_at,
            "fired_at": fired_at,
            "job_id": job_id,
            "error": error,
        },
    )
