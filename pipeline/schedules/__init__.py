"""Recurring schedules: declared in code with `schedule()`, or with `pipeline schedule add`.

A schedule is a row of `pipeline.schedules`: a stage, a payload and a timing (a cron expression
read in a timezone, or a period in seconds), with the earliest fire time not yet enqueued.
Code declarations collect in an in-memory registry at import time; `sync_schedules` writes them
when a worker starts. Any worker's `Scheduler` (pipeline/maintenance/scheduler.py) fires due
rows, so no leader is needed.

By seam: `timing` (fire times, no database), `declarations` (`schedule()` and the registry),
`table` (the one home of the table's SQL), and `checks` (a definition's checks, raised as
InvalidSchedule). Every public name is importable from here.
"""

from pg_pipeline.inputs import CATCH_UP_MAX, CRON_ALIASES, EVERY_MAX_S, EVERY_MIN_S, NAME_MAX
from pg_pipeline.schedules.checks import (
    InvalidSchedule,
    check_catch_up,
    check_cron,
    check_every,
    check_name,
    check_timezone,
)
from pg_pipeline.schedules.declarations import SCHEDULES, Schedule, ScheduleRegistry, schedule
from pg_pipeline.schedules.table import (
    DueSchedule,
    ScheduleOwnedByCode,
    ScheduleRow,
    Source,
    SyncResult,
    advance,
    any_due,
    clock,
    list_schedules,
    note_error,
    pause_schedule,
    remove_schedule,
    resume_schedule,
    save_schedule,
    sync_schedules,
    take_due,
)
from pg_pipeline.schedules.timing import Timing, fire_key, utc

__all__ = [
    "CATCH_UP_MAX",
    "CRON_ALIASES",
    "EVERY_MAX_S",
    "EVERY_MIN_S",
    "NAME_MAX",
    "SCHEDULES",
    "DueSchedule",
    "InvalidSchedule",
    "Schedule",
    "ScheduleOwnedByCode",
    "ScheduleRegistry",
    "ScheduleRow",
    "Source",
    "SyncResult",
    "Timing",
    "advance",
    "any_due",
    "check_catch_up",
    "check_cron",
    "check_every",
    "check_name",
    "check_timezone",
    "clock",
    "fire_key",
    "list_schedules",
    "note_error",
    "pause_schedule",
    "remove_schedule",
    "resume_schedule",
    "save_schedule",
    "schedule",
    "sync_schedules",
    "take_due",
    "utc",
]
