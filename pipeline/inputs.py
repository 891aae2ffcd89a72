"""One answer to "is this value acceptable", for every surface: the library, the CLI, command
plug-ins and the dashboard.

Each check takes a value as it arrives (text from a command line or a form, or a Python value
from code), returns it in the form the rest of the code uses, and raises ValueError with a
one-line reason otherwise. The CLI wraps them once as argparse types (`argument` in
pipeline/commands/api.py), the dashboard once as form readers (pipeline/dashboard/forms.py), the
library in its own errors (InvalidJob, InvalidSchedule). A check of text that a form field may
hold takes `what`, the field's name, to begin its message with; on a command line argparse
names the flag itself.

A time must carry its UTC offset (`Z`, `+01:00`), or come with one its caller states explicitly
(the dashboard's time fields are labelled UTC and send `Z` along). A time without one is refused,
not guessed: read as UTC or as someone's local time, it would be an hour or more off for
someone, silently.
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pg_pipeline.jsonb import find_unstorable
from pg_pipeline.terminal import printable
from pg_pipeline.vocabulary import (
    CAP_MAX,
    DEDUP_KEY_MAX_BYTES,
    DELAY_MAX_S,
    JOB_ID_MAX,
    PRIORITY_MAX,
    PRIORITY_MIN,
    TENANT_ID_MAX_BYTES,
)

#: Most missed fire times one schedule replays after an outage. Each is a job inserted in one
#: scheduler transaction, so a typo must not be able to ask for millions.
CATCH_UP_MAX = 1000
#: Shortest period of a schedule. Shorter periods round to nothing in timestamptz's microseconds.
EVERY_MIN_S = 0.001
#: Longest period of a schedule: far beyond any real period, far below where timestamps overflow.
EVERY_MAX_S = float(DELAY_MAX_S)
NAME_MAX = 200  #: characters in a schedule's name; it is part of every fired job's dedup key
#: Longest wait name: a name is a label an operator types (`pipeline runs signal RUN NAME`).
WAIT_NAME_MAX = 100

#: The shorthands of Vixie cron, which cronsim does not read itself.
CRON_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

#: Units of a duration (90s, 15m, 2h, 7d), in seconds.
DURATION_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400}

_INTEGER = re.compile(
    r"-?[0-9]+"
)  # ASCII digits: int() also reads ' 7', '+7', '7_0' and other scripts' digits
_DURATION = re.compile(r"([0-9]{1,12})([smhd])")  # ASCII digits, no sign, no spaces


def shown(text: str, limit: int = 40) -> str:
    """`text` as a quoted, printable and short excerpt, for an error message."""
    try:
        text = os.fsencode(text).decode("utf-8", "backslashreplace")
    except UnicodeError:
        text = text.encode("utf-8", "backslashreplace").decode("ascii")
    text = printable(text)
    return f"'{text if len(text) <= limit else text[:limit] + '...'}'"


# -- text ---------------------------------------------------------------------------------------


def text(value: str, what: str = "the text") -> str:
    """Text PostgreSQL can take: UTF-8 (argv bytes that are not arrive as surrogates, which
    cannot be sent) without a NUL character."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{shown(value)} is not valid UTF-8") from None
    if "\x00" in value:
        raise ValueError(f"{what} cannot contain a NUL character")
    return value


def index_key(value: str, limit: int, what: str, *, hint: str = "") -> str:
    """Text that is a key of a btree index: UTF-8 without a NUL character, and at most `limit`
    bytes of it, for PostgreSQL refuses a longer index entry, inside the caller's transaction
    (or a stage's completing one) and with a message that names no field. `hint` ends the
    message of one too long."""
    if "\x00" in value:
        raise ValueError(f"{what} cannot contain a NUL character")
    if value.isascii():  # one byte a character: the common case costs no encoding
        size = len(value)
    else:
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            raise ValueError(f"{what} {shown(value)} is not valid UTF-8") from None
    if size > limit:
        raise ValueError(
            f"{what} is {size:,} bytes long (UTF-8); at most {limit:,} are allowed, since it is "
            f"a key of the queue's indexes{hint}"
        )
    return value


def tenant(value: str) -> str:
    """A tenant id given as text."""
    # An empty one is most likely an unset shell variable: as a tenant of its own it would be a
    # silent namespace nobody meant.
    if not value:
        raise ValueError("the tenant cannot be empty (is a shell variable unset?)")
    return index_key(value, TENANT_ID_MAX_BYTES, "a tenant id")


def tenant_id(value: str | int) -> str:
    """A job's tenant as code gives it (text, or a number that stands for one)."""
    return index_key(str(value), TENANT_ID_MAX_BYTES, "tenant_id")


def dedup_key(value: str) -> str:
    """A job's dedup key."""
    hint = " (use a hash of a longer key, e.g. its SHA-256)"
    return index_key(value, DEDUP_KEY_MAX_BYTES, "dedup_key", hint=hint)


def wait_name(name: object) -> str:
    """A wait's name, or ValueError saying what one can be."""
    if not isinstance(name, str) or not name.strip() or len(name) > WAIT_NAME_MAX:
        raise ValueError(
            f"a wait's name is a non-blank string of at most {WAIT_NAME_MAX} characters"
        )
    if "\x00" in name:
        raise ValueError("a wait's name cannot hold a NUL character")
    return name


def stage_name(value: str) -> str:
    if not value:
        raise ValueError("a stage name cannot be empty")
    return text(value, "a stage name")


# -- numbers ------------------------------------------------------------------------------------


def integer(value: str) -> int:
    """An integer written in ASCII digits, with a minus sign or none."""
    if _INTEGER.fullmatch(value):
        try:
            return int(value)
        except ValueError:  # 4301+ digits, which int() refuses to read
            pass
    raise ValueError(f"{shown(value)} is not an integer")


def whole_number(value: str, low: int, high: int, what: str | None = None) -> int:
    try:
        number: int | None = integer(value)
    except ValueError:
        number = None
    if number is None or not low <= number <= high:
        lead = "" if what is None else f"{what} "
        raise ValueError(f"{lead}must be a whole number within {low}..{high}, not {shown(value)}")
    return number


def job_id(value: str, what: str | None = None) -> int:
    return whole_number(value, 1, JOB_ID_MAX, what)


def cap(value: str) -> int:
    """A tenant's cap on running jobs of a stage: 0 (paused) or more."""
    return whole_number(value, 0, CAP_MAX)


#: The largest count of dead rows a setting may name: more than any table holds.
DEAD_ROWS_MAX = 10**12


def dead_rows_or_off(value: str) -> int | None:
    """A count of dead rows (the hot vacuum's threshold), or off (None)."""
    if value.strip().lower() == "off":
        return None
    return whole_number(value, 1, DEAD_ROWS_MAX)


#: A tenant's weight at most (the table's check says the same).
WEIGHT_MAX = 1_000_000.0
#: A tenant's weight at least: a claim advances a pair's pass by n / weight, and a tinier weight
#: soon takes it past the largest double (1e-310: the first claim), which fails every claim of
#: the stage, every tenant's.
WEIGHT_MIN = 1e-6


def _real(value: str | float) -> float:
    """A number read from text (or given); nan when it is none (and nan is never finite)."""
    try:
        return float(value)
    except (ValueError, TypeError):
        return math.nan


def weight(value: str | float) -> float:
    """A tenant's weight in the fair share: at least WEIGHT_MIN, at most WEIGHT_MAX."""
    number = _real(value)
    if not (math.isfinite(number) and WEIGHT_MIN <= number <= WEIGHT_MAX):
        raise ValueError(f"a weight must be a number from 1e-6 to 1e6, not {shown(str(value))}")
    return number


def budget_limit(value: str | float) -> float:
    """A budget's limit in its counter's units (or money): 0 or more, finite."""
    number = _real(value)
    if not (math.isfinite(number) and number >= 0):
        raise ValueError(f"a budget's limit must be a number 0 or more, not {shown(str(value))}")
    return number


def share(value: str) -> float:
    """A share of a whole: more than 0, at most 1 (0.8: 80%)."""
    number = _real(value)
    if not (math.isfinite(number) and 0 < number <= 1):
        raise ValueError(f"a share must be a number more than 0 and at most 1, not {shown(value)}")
    return number


def rest(value: str) -> float:
    """A rest as a multiple of the time the work before it took: 0 to 100 (retention's)."""
    number = _real(value)
    if not (math.isfinite(number) and 0 <= number <= 100):
        raise ValueError(f"a rest must be 0 to 100 times a batch's time, not {shown(value)}")
    return number


def priority(value: int) -> int:
    """`value` if it fits `jobs.priority`; the reason names the valid range."""
    if isinstance(value, bool):  # an int to Python, but never a meant priority
        raise ValueError(f"priority must be an integer, not {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise ValueError(f"priority must be an integer, not {value!r}") from None
    if not PRIORITY_MIN <= number <= PRIORITY_MAX:
        raise ValueError(f"priority must be within {PRIORITY_MIN}..{PRIORITY_MAX}, not {number}")
    return number


# -- durations and times ------------------------------------------------------------------------


def number_of_seconds(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{shown(value)} is not a number of seconds") from None


def seconds(value: str, high: float = math.inf, *, above_zero: bool = False) -> float:
    """Seconds within 0..high (more than 0 with `above_zero`): finite, because `nan` and `inf`
    read as numbers too."""
    number = number_of_seconds(value)
    low_ok = number > 0 if above_zero else number >= 0
    if not (math.isfinite(number) and low_ok and number <= high):
        if above_zero:
            bounds = "more than 0" + ("" if math.isinf(high) else f" and at most {high:.0f}")
        else:
            bounds = "0 or more" if math.isinf(high) else f"within 0..{high:.0f}"
        raise ValueError(f"must be a number of seconds {bounds}, not {shown(value)}")
    return number


def duration(value: str) -> float:
    """Seconds from a whole number and its unit: 90s, 15m, 2h, 7d. More than 0 (a retention of
    nothing is a typo more likely than a wish) and at most DELAY_MAX_S."""
    match = _DURATION.fullmatch(value)
    if match is None:
        raise ValueError(f"{shown(value)} is not a duration such as 90s, 15m, 2h or 7d")
    total = int(match[1]) * DURATION_UNITS[match[2]]
    if not 0 < total <= DELAY_MAX_S:
        raise ValueError(
            f"must be more than 0 and at most {DELAY_MAX_S // 86_400}d, not {shown(value)}"
        )
    return float(total)


def utc_offset(value: str) -> tzinfo:
    """A UTC offset as ISO 8601 writes it: `Z`, `+01:00`, `-0530`."""
    try:
        zone = datetime.fromisoformat(f"2000-01-01T00:00{value}").tzinfo
    except ValueError:
        zone = None
    if zone is None or value[:1] not in ("Z", "+", "-"):
        raise ValueError(f"{shown(value)} is not a UTC offset such as Z or +01:00")
    return zone


def instant(value: str, what: str | None = None, *, offset: str | None = None) -> datetime:
    """An ISO 8601 time with its UTC offset. A time without one takes `offset` when the caller
    states one (a form whose field says which), and is refused otherwise."""
    subject = shown(value) if what is None else what
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(
            f"{subject} is not an ISO 8601 time such as 2026-12-01T09:30:00+01:00"
        ) from None
    if moment.utcoffset() is None:
        if offset is None:
            raise ValueError(
                f"{subject} has no UTC offset: add one, e.g. Z or +01:00 "
                "(a time without one is ambiguous)"
            )
        moment = moment.replace(tzinfo=utc_offset(offset))
    return moment


def start_time(value: str) -> datetime:
    """A time before which a job may not run: an instant at most 100 years ahead."""
    moment = instant(value)
    try:
        ahead = (moment - datetime.now(UTC)).total_seconds()
    except OverflowError:  # an offset that pushes year 1 or 9999 out of range
        ahead = math.inf
    if ahead > DELAY_MAX_S:
        raise ValueError(f"{shown(value)} is more than 100 years from now")
    return moment


def since_day(value: str) -> date:
    """The first UTC day of a report: a date (2026-12-01), or how far back from now (7d, 36h:
    the day that was that long ago)."""
    try:
        return date.fromisoformat(value)
    except ValueError:
        pass
    try:
        back = duration(value)
    except ValueError:
        raise ValueError(
            f"{shown(value)} is neither a date (2026-12-01) nor a time back (7d)"
        ) from None
    return (datetime.now(UTC) - timedelta(seconds=back)).date()


def price(value: str) -> float:
    """Money per unit of a counter: a finite number >= 0."""
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{shown(value)} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{shown(value)} is not a price (a finite number >= 0)")
    return number


def currency(value: str) -> str:
    """A currency's code: three letters (EUR, USD)."""
    if not re.fullmatch(r"[A-Za-z]{3}", value):
        raise ValueError(f"{shown(value)} is not a currency code of three letters (EUR, USD)")
    return value.upper()


# -- payloads -----------------------------------------------------------------------------------


def payload(value: Any) -> Any:
    """A JSON value that a jsonb column can store; the reason names the first field it cannot."""
    problem = find_unstorable(value)
    if problem is not None:
        raise ValueError(f"payload cannot be stored: {problem}")
    return value


def payload_text(value: str) -> Any:
    """A payload given as JSON text."""
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(f"payload is not valid JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:  # an integer of 4301+ digits; deep nesting
        raise ValueError(f"payload cannot be read: {exc}") from None
    return payload(parsed)


# -- schedules ----------------------------------------------------------------------------------


def schedule_name(value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("a schedule needs a non-empty name")
    if len(value) > NAME_MAX:
        raise ValueError(f"a schedule's name is at most {NAME_MAX} characters")
    return text(value, "a schedule's name")


def cron_expression(cron: str) -> str:
    """What cronsim reads for `cron`: the expression, or the one a shorthand stands for."""
    return CRON_ALIASES.get(cron.strip().lower(), cron)


def cron(value: str) -> str:
    """`value`, whitespace collapsed, if cronsim reads it and it fires at all; the reason is
    cronsim's. Five fields, or six with seconds first, or a shorthand such as `@daily`."""
    # Imported here: every command imports this module for its argument types, and only the
    # schedules read cron expressions.
    from cronsim import CronSim, CronSimError

    if not isinstance(value, str) or not value.strip():
        raise ValueError("the cron expression is empty")
    collapsed = " ".join(value.split())
    try:
        next(CronSim(cron_expression(collapsed), datetime.now(UTC)))
    except CronSimError as exc:
        raise ValueError(f"invalid cron expression {value!r}: {exc}") from None
    except StopIteration:  # no match within cronsim's 50-year horizon, e.g. `0 0 31 4 *`
        raise ValueError(f"cron expression {value!r} never fires") from None
    return collapsed


def timezone(value: str) -> str:
    """An IANA timezone name that this system knows."""
    try:
        ZoneInfo(value)
    # ValueError: a path-like or otherwise malformed key, which zoneinfo refuses outright.
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ValueError(
            f"unknown timezone {value!r}: use an IANA name such as 'Europe/Berlin' or 'UTC'"
        ) from None
    return value


def every(value: float | timedelta) -> float:
    """A schedule's period, in seconds."""
    total = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(total, bool) or not isinstance(total, int | float):
        raise ValueError(f"every must be a number of seconds, not {value!r}")
    if not (math.isfinite(total) and total > 0):
        raise ValueError(f"every must be more than 0 seconds, not {total!r}")
    if not EVERY_MIN_S <= total <= EVERY_MAX_S:
        raise ValueError(
            f"every must be within {EVERY_MIN_S}..{EVERY_MAX_S:.0f} seconds, not {total!r}"
        )
    return float(total)


def catch_up(value: int) -> int:
    """How many missed fire times a schedule replays after an outage."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"catch_up must be an integer, not {value!r}")
    if not 1 <= value <= CATCH_UP_MAX:
        raise ValueError(f"catch_up must be within 1..{CATCH_UP_MAX}, not {value}")
    return value
