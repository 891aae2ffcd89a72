"""What every `pipeline` subcommand shares: exit codes, errors, the database, argument types.

Kept apart from pipeline/cli.py so that command modules (pipeline/commands/*) can import it
without importing the CLI that imports them.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import re
from collections.abc import Callable
from typing import Any, NoReturn

import psycopg

from pipeline.db import connect, database_url, describe
from pipeline.migrate import migrate, pending
from pipeline.validation import InvalidJob, check_priority

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.code = code


def open_db(*, auto_migrate: bool = True) -> tuple[str, psycopg.Connection[Any]]:
    dsn = database_url()
    conn = connect(dsn)
    behind = pending(conn)
    if behind:
        if auto_migrate and os.environ.get("PIPELINE_AUTO_MIGRATE", "1") != "0":
            migrate(conn)
        else:
            conn.close()
            raise CliError(
                f"the database at {describe(dsn)} lacks migrations {behind}: run `pipeline migrate`"
            )
    return dsn, conn


# -- checking arguments -------------------------------------------------------------------------
# argparse runs these on every value, and on string defaults such as PIPELINE_LOG_LEVEL's, so bad
# input is a one-line usage error (exit 2) before anything is imported, connected or stored.

JOB_STATUSES = ("queued", "running", "done", "failed", "cancelled")  #: jobs_status_check
JOB_ID_MAX = 2**63 - 1  #: job ids are bigint
CAP_MAX = 2**31 - 1  #: tenant caps are integers
LIST_LIMIT_MAX = 10_000  #: rows `jobs list` prints at most; they are all held in memory
#: Longest --delay. Far beyond any real schedule, and far below where timestamps overflow.
DELAY_MAX_S = 100 * 365 * 86_400
#: Longest --grace, --poll-interval, --reclaim-interval: threading's waits overflow at ~292 years.
INTERVAL_MAX_S = 7 * 86_400


class ArgumentParser(argparse.ArgumentParser):
    """Usage errors in one line, like the CLI's own; the usage is one `--help` away."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def _shown(text: str, limit: int = 40) -> str:
    """`text` as a quoted, printable and short excerpt, for an error message."""
    try:
        text = os.fsencode(text).decode("utf-8", "backslashreplace")
    except UnicodeError:
        text = text.encode("utf-8", "backslashreplace").decode("ascii")
    return f"'{text if len(text) <= limit else text[:limit] + '...'}'"


def text_arg(text: str) -> str:
    """A string that can be sent to PostgreSQL: argv bytes that are not UTF-8 cannot."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is not valid UTF-8") from None
    return text


def tenant_arg(text: str) -> str:
    # An empty tenant is most likely an unset shell variable: as a tenant of its own it would
    # be a silent namespace nobody meant.
    if not text:
        raise argparse.ArgumentTypeError("the tenant cannot be empty; leave --tenant out instead")
    return text_arg(text)


def integer_arg(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # also 4301+ digits, which int() refuses to read
            raise argparse.ArgumentTypeError(
                f"{_shown(text)} is not an integer within {low}..{high}"
            ) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be within {low}..{high}, not {_shown(text)}")
        return value

    return parse


def priority_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is not an integer") from None
    try:
        return check_priority(value)
    except InvalidJob as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def seconds_arg(high: float) -> Callable[[str], float]:
    """Seconds within 0..high: finite, because `nan` and `inf` parse as floats too."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not a number of seconds") from None
        if not (math.isfinite(value) and 0 <= value <= high):
            raise argparse.ArgumentTypeError(
                f"must be a number of seconds within 0..{high:.0f}, not {_shown(text)}"
            )
        return value

    return parse


#: Units of a duration (--since, --older-than, --retention), in seconds.
DURATION_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400}


def duration_arg(text: str) -> float:
    """Seconds from a whole number and its unit: 90s, 15m, 2h, 7d. More than 0 (a retention of
    nothing is a typo more likely than a wish) and at most DELAY_MAX_S."""
    match = re.fullmatch(r"([0-9]{1,12})([smhd])", text)  # ASCII digits, no sign, no spaces
    if match is None:
        raise argparse.ArgumentTypeError(
            f"{_shown(text)} is not a duration such as 90s, 15m, 2h or 7d"
        )
    seconds = int(match[1]) * DURATION_UNITS[match[2]]
    if not 0 < seconds <= DELAY_MAX_S:
        raise argparse.ArgumentTypeError(
            f"must be more than 0 and at most {DELAY_MAX_S // 86_400}d, not {_shown(text)}"
        )
    return float(seconds)


def log_level_arg(text: str) -> str:
    level = text.strip().upper()
    if level not in logging.getLevelNamesMapping():
        names = ", ".join(("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
        raise argparse.ArgumentTypeError(
            f"unknown log level {_shown(text)} (from --log-level or PIPELINE_LOG_LEVEL); "
            f"use one of {names}"
        )
    return level
