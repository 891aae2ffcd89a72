"""Recurring schedules: declared in code with `schedule()`, or with `pipeline schedule add`.

A schedule is a row of `pipeline_schedules`: a stage, a payload and a timing (a cron expression
read in a timezone, or a period in seconds), with the earliest fire time not yet enqueued.
Code declarations collect in an in-memory registry at import time; `sync_schedules` writes them
when a worker starts. Any worker's `Scheduler` (pipeline/maintenance/scheduler.py) fires due
rows, so no leader is needed. This module is the one home of the table's SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar
from zoneinfo import ZoneInfo

import psycopg
from cronsim import CronSim
from psycopg.types.json import Jsonb
from pydantic import BaseModel

from pipeline import inputs
from pipeline.errors import PipelineError
from pipeline.inputs import CATCH_UP_MAX as CATCH_UP_MAX  # the limits are the checks': re-exported
from pipeline.inputs import CRON_ALIASES as CRON_ALIASES
from pipeline.inputs import EVERY_MAX_S as EVERY_MAX_S
from pipeline.inputs import EVERY_MIN_S as EVERY_MIN_S
from pipeline.inputs import NAME_MAX as NAME_MAX
from pipeline.inputs import cron_expression
from pipeline.queries import Q
from pipeline.stage import REGISTRY, Registry

T = TypeVar("T")

Source = Literal["code", "cli"]


class InvalidSchedule(PipelineError, ValueError):
    """A schedule's definition cannot be used (bad cron, period, timezone, name). Nothing was
    stored."""


class ScheduleOwnedByCode(PipelineError):
    """`pipeline schedule add` named a schedule that code declares: the next worker to start
    would overwrite the change, so it is refused."""


# -- checking a definition: pipeline.inputs' checks, raised as InvalidSchedule -------------------


def _checked(check: Callable[[Any], T], value: Any) -> T:
    try:
        return check(value)
    except ValueError as exc:
        raise InvalidSchedule(str(exc)) from None


def check_name(name: str) -> str:
    return _checked(inputs.schedule_name, name)


def check_timezone(name: str) -> ZoneInfo:
    return ZoneInfo(_checked(inputs.timezone, name))


def check_cron(cron: str) -> str:
    """`cron`, whitespace collapsed, if cronsim reads it and it fires at all; else
    InvalidSchedule with cronsim's reason. Five fields, or six with seconds first."""
    return _checked(inputs.cron, cron)


def check_every(every: float | timedelta) -> float:
    return _checked(inputs.every, every)


def check_catch_up(catch_up: int) -> int:
    return _checked(inputs.catch_up, catch_up)


# -- fire times ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """When a schedule fires: `cron` read in `timezone`, or every `every_s` seconds."""

    cron: str | None = None
    every_s: float | None = None
    timezone: str = "UTC"

    @classmethod
    def of(
        cls,
        *,
        cron: str | None = None,
        every: float | timedelta | None = None,
        timezone: str | None = None,
    ) -> Timing:
        if (cron is None) == (every is None):
            raise InvalidSchedule("give a schedule either cron= or every=, not both or neither")
        if every is not None:
            # A period is a number of seconds on the timeline: a timezone would change nothing,
            # and accepting one would suggest it did (fires at local midnight, say).
            if timezone not in (None, "UTC"):
                raise InvalidSchedule("a timezone applies to cron schedules only, not to every=")
            return cls(every_s=check_every(every))
        assert cron is not None
        zone = timezone or "UTC"
        check_timezone(zone)
        return cls(cron=check_cron(cron), timezone=zone)

    def describe(self) -> str:
        if self.cron is not None:
            return f"{self.cron} ({self.timezone})"
        assert self.every_s is not None
        return f"every {self.every_s:g} s"

    def first_after(self, now: datetime) -> datetime:
        """The first fire time of a schedule defined (or re-timed) at `now`: the cron's next
        match, or one period from now."""
        if self.every_s is not None:
            return utc(now) + timedelta(seconds=self.every_s)
        return self._cron_after(now)

    def due(
        self, next_fire_at: datetime, now: datetime, limit: int
    ) -> tuple[list[datetime], datetime]:
        """The fire times from `next_fire_at` up to `now`, only the latest `limit` of them (oldest
        first), and the first fire time after `now`. Never walks the fire times in between, so
        a schedule of one second missed for a month costs no more than one missed for a minute.
        """
        next_fire_at, now = utc(next_fire_at), utc(now)
        if next_fire_at > now:
            return [], next_fire_at
        if self.every_s is not None:
            # Fire times are next_fire_at + k * period: the phase survives outages and resumes.
            step = timedelta(seconds=self.every_s)
            last = (now - next_fire_at) // step
            first = max(0, last - limit + 1)
            times = [next_fire_at + k * step for k in range(first, last + 1)]
            return times, next_fire_at + (last + 1) * step
        return self._cron_latest(next_fire_at, now, limit), self._cron_after(now)

    def _cron_after(self, now: datetime) -> datetime:
        assert self.cron is not None
        zone = ZoneInfo(self.timezone)
        # cronsim reads the expression in the timezone of the datetime it starts from, and
        # handles DST as Debian cron does: a time skipped in spring runs at the jump, a time
        # repeated in autumn runs once.
        try:
            found = next(CronSim(cron_expression(self.cron), now.astimezone(zone)))
        except StopIteration:
            raise InvalidSchedule(f"cron expression {self.cron!r} never fires again") from None
        return found.astimezone(UTC)

    def _cron_latest(self, since: datetime, now: datetime, limit: int) -> list[datetime]:
        assert self.cron is not None
        zone = ZoneInfo(self.timezone)
        # Backwards from `now`, inclusive: cronsim's reverse iteration starts one second before
        # a whole-second datetime, so it starts from the second after `now`.
        start = now.replace(microsecond=0) + timedelta(seconds=1)
        backwards = CronSim(cron_expression(self.cron), start.astimezone(zone), reverse=True)
        found: list[datetime] = []
        for moment in backwards:
            fire = moment.astimezone(UTC)
            if fire < since or len(found) >= limit:
                break
            if fire <= now:
                found.append(fire)
        found.reverse()
        return found


def fire_key(name: str, fire_at: datetime) -> str:
    """The dedup key of the job a schedule enqueues for one fire time. The timestamp holds no
    `@`, so distinct (name, time) pairs never share a key, whatever the name holds."""
    return f"schedule:{name}@{fire_at.astimezone(UTC).isoformat()}"


# -- declarations -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    """One schedule's definition, as code declares it or `pipeline schedule add` gives it."""

    name: str
    stage: str
    timing: Timing
    payload: Any = field(default_factory=dict)
    tenant_id: str | None = None
    catch_up: int = 1

    @classmethod
    def define(
        cls,
        name: str,
        *,
        stage: str,
        cron: str | None = None,
        every: float | timedelta | None = None,
        payload: Any = None,
        tenant_id: str | int | None = None,
        timezone: str | None = None,
        catch_up: int = 1,
    ) -> Schedule:
        """A checked definition: everything but the stage, which may not be imported yet."""
        if isinstance(payload, BaseModel):
            payload = payload.model_dump(mode="json")
        payload = {} if payload is None else payload
        tenant = None if tenant_id is None else str(tenant_id)
        try:
            inputs.payload(payload)
            if tenant is not None:
                inputs.text(tenant, "tenant_id")
        except ValueError as exc:
            raise InvalidSchedule(f"schedule {name!r}: {exc}") from None
        if not isinstance(stage, str) or not stage:
            raise InvalidSchedule(f"schedule {name!r} needs a stage")
        return cls(
            name=check_name(name),
            stage=stage,
            timing=Timing.of(cron=cron, every=every, timezone=timezone),
            payload=payload,
            tenant_id=tenant,
            catch_up=check_catch_up(catch_up),
        )

    def check(self, stages: Registry) -> None:
        """UnknownStage, or InvalidPayload with pydantic's message, when `stages` cannot run
        it. The stored payload stays as given: each fire validates it again, so defaults the
        model gains later apply to later jobs."""
        stages.get(self.stage).validate(self.payload)


class ScheduleRegistry:
    """Schedule name to definition; `schedule()` fills the default one at import time."""

    def __init__(self) -> None:
        self._schedules: dict[str, Schedule] = {}

    def add(self, item: Schedule) -> None:
        existing = self._schedules.get(item.name)
        # The same declaration imported twice (a module reloaded) is harmless; two different
        # ones under one name would silently overwrite each other in the database.
        if existing is not None and existing != item:
            raise ValueError(f"schedule {item.name!r} is declared twice, differently")
        self._schedules[item.name] = item

    def names(self) -> list[str]:
        return sorted(self._schedules)

    def __iter__(self) -> Iterator[Schedule]:
        return iter([self._schedules[n] for n in self.names()])

    def __len__(self) -> int:
        return len(self._schedules)

    def __contains__(self, name: object) -> bool:
        return name in self._schedules


SCHEDULES = ScheduleRegistry()


def schedule(
    name: str,
    *,
    stage: str,
    cron: str | None = None,
    every: float | timedelta | None = None,
    payload: Any = None,
    tenant_id: str | int | None = None,
    timezone: str | None = None,
    catch_up: int = 1,
    registry: ScheduleRegistry | None = None,
    stages: Registry | None = None,
) -> Schedule:
    """Declare a recurring job; a worker writes it to the database when it starts.

    `cron` is a cron expression (five fields, six with seconds first, or `@daily` and friends)
    read in `timezone` (an IANA name, default UTC); `every` is a period in seconds (or a
    timedelta). `catch_up` is how many fire times missed while no worker ran are still
    enqueued, the latest ones (default 1: the latest missed one). A bad definition raises
    InvalidSchedule here; the payload is checked against the stage now if the stage is
    registered already, and otherwise when the worker syncs.
    """
    item = Schedule.define(
        name,
        stage=stage,
        cron=cron,
        every=every,
        payload=payload,
        tenant_id=tenant_id,
        timezone=timezone,
        catch_up=catch_up,
    )
    known = stages if stages is not None else REGISTRY
    if item.stage in known:
        item.check(known)
    (registry if registry is not None else SCHEDULES).add(item)
    return item


# -- the table ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleRow:
    """A row of pipeline_schedules, as `pipeline schedule list` shows it."""

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


def utc(moment: datetime) -> datetime:
    """`moment` in UTC. psycopg returns timestamptz in the session's TimeZone, and Python
    adds to and subtracts aware datetimes of one zone in wall time: an hour added across a DST
    change would be two, or none. In UTC every period is the period."""
    return moment.astimezone(UTC)


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


def take_due(
    conn: psycopg.Connection[Any], stages: list[str], limit: int, now: datetime | None
) -> list[DueSchedule]:
    """Lock up to `limit` due, unpaused schedules of `stages` (SKIP LOCKED: rows another
    scheduler holds are left to it). Call inside the transaction that advances them."""
    rows = conn.execute(
        Q["schedule_due"], {"now": now, "stages": stages, "limit": limit}
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
