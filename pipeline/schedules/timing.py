"""When a schedule fires: the next fire time of a cron expression in a timezone or of a period,
the fire times missed since, and the dedup key of the job each one enqueues. Pure arithmetic on
UTC datetimes; no database."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cronsim import CronSim, CronSimError

from pg_pipeline.inputs import cron_expression
from pg_pipeline.schedules.checks import InvalidSchedule, check_cron, check_every, check_timezone


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

    def _cron(self, start: datetime, *, reverse: bool = False) -> CronSim:
        """cronsim over this schedule's expression, from `start` read in its timezone.

        A row is written by one worker and read by all: one whose tzdata lacks the timezone, or
        whose cronsim refuses the expression, gets InvalidSchedule naming it, as a definition
        would, rather than an error of zoneinfo's or cronsim's own that a caller cannot expect.
        """
        assert self.cron is not None
        zone = check_timezone(self.timezone)
        try:
            return CronSim(cron_expression(self.cron), start.astimezone(zone), reverse=reverse)
        except CronSimError as exc:
            raise InvalidSchedule(f"invalid cron expression {self.cron!r}: {exc}") from None

    def _cron_after(self, now: datetime) -> datetime:
        # cronsim reads the expression in the timezone of the datetime it starts from, and
        # handles DST as Debian cron does: a time skipped in spring runs at the jump, a time
        # repeated in autumn runs once.
        try:
            found = next(self._cron(now))
        except StopIteration:
            raise InvalidSchedule(f"cron expression {self.cron!r} never fires again") from None
        return found.astimezone(UTC)

    def _cron_latest(self, since: datetime, now: datetime, limit: int) -> list[datetime]:
        # Backwards from `now`, inclusive: cronsim's reverse iteration starts one second before
        # a whole-second datetime, so it starts from the second after `now`.
        start = now.replace(microsecond=0) + timedelta(seconds=1)
        backwards = self._cron(start, reverse=True)
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


def utc(moment: datetime) -> datetime:
    """`moment` in UTC. psycopg returns timestamptz in the session's TimeZone, and Python
    adds to and subtracts aware datetimes of one zone in wall time: an hour added across a DST
    change would be two, or none. In UTC every period is the period."""
    return moment.astimezone(UTC)
