"""What every `pipeline` command uses, the core ones and those packages add: exit codes, the
error that ends a command, the database, the app modules, and argument types.

This is the public surface for command plug-ins (the `pipeline.commands` entry point group, how
the document stages add `submit`): a plug-in imports from here and from `pipeline`, nothing
else. A command module has one shape: `add_commands(sub)` adds its parsers to the `pipeline`
parser's subcommands (`add_command` below gives each the same help and handler), and `run(args)`
runs it and returns the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib.metadata import entry_points
from typing import Any, TypeAlias

import psycopg

from pipeline.db import connect, database_url, describe
from pipeline.migrate import migrate, pending
from pipeline.validation import InvalidJob, check_priority, find_unstorable
from pipeline.vocabulary import DELAY_MAX_S

#: The `pipeline` parser's subcommands, which a command module's `add_commands` adds to.
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

__all__ = [
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "CliError",
    "Subcommands",
    "add_command",
    "duration_arg",
    "instant_arg",
    "integer_arg",
    "load_apps",
    "log_level_arg",
    "open_db",
    "parse_payload",
    "priority_arg",
    "seconds_arg",
    "tenant_arg",
    "text_arg",
]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    """Ends a command with one line on stderr (`pipeline: <message>`) and `code`."""

    def __init__(self, message: str, code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.code = code


def add_command(
    sub: Subcommands,
    name: str,
    run: Callable[[argparse.Namespace], int],
    help: str,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """Add the command `name`, run by `run`, to the `pipeline` parser's subcommands."""
    parser = sub.add_parser(name, help=help, description=description or help)
    parser.set_defaults(handler=run)
    return parser


# -- the database and the apps ------------------------------------------------------------------


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


def load_apps(modules: Sequence[str]) -> None:
    """Import the modules that define stages: --app, PIPELINE_APP, then installed plugins
    (the `pipeline.apps` entry point group, which is how packages add built-in stages)."""
    if os.getcwd() not in sys.path:
        # Last, not first: `--app shop.stages` still resolves from the current directory, but a
        # folder there named like an installed package (`stages/` in a user's project,
        # `pipeline/` in a checkout) cannot shadow it.
        sys.path.append(os.getcwd())
    names = [m for chunk in modules for m in chunk.split(",") if m.strip()]
    names += [m for m in os.environ.get("PIPELINE_APP", "").split(",") if m.strip()]
    for name in names:
        try:
            importlib.import_module(name.strip())
        except Exception as exc:
            raise CliError(
                f"cannot import app module {name!r}: {type(exc).__name__}: {exc}"
            ) from exc
    for ep in entry_points(group="pipeline.apps"):
        try:
            ep.load()
        except Exception as exc:
            raise CliError(f"cannot load stages plugin {ep.name!r} ({ep.value}): {exc}") from exc


def parse_payload(text: str) -> Any:
    """A payload given as JSON text, refused (exit 2) when jsonb could not store it."""
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"payload is not valid JSON: {exc}", EXIT_USAGE) from exc
    except (ValueError, RecursionError) as exc:  # an integer of 4301+ digits; deep nesting
        raise CliError(f"payload cannot be read: {exc}", EXIT_USAGE) from exc
    problem = find_unstorable(payload)
    if problem is not None:
        raise CliError(f"payload cannot be stored: {problem}", EXIT_USAGE)
    return payload


# -- checking arguments -------------------------------------------------------------------------
# argparse runs these on every value, and on string defaults such as PIPELINE_LOG_LEVEL's, so bad
# input is a one-line usage error (exit 2) before anything is imported, connected or stored.


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


def instant_arg(text: str) -> datetime:
    """An ISO 8601 time with a UTC offset (`Z` counts), at most 100 years ahead. A time without
    one is refused, not guessed: read as UTC or as the shell's local time, it would be an hour or
    more off for someone, silently."""
    try:
        value = datetime.fromisoformat(text_arg(text).strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{_shown(text)} is not an ISO 8601 time such as 2026-12-01T09:30:00+01:00"
        ) from None
    if value.tzinfo is None or value.utcoffset() is None:
        raise argparse.ArgumentTypeError(
            f"{_shown(text)} has no UTC offset: add one, e.g. Z or +01:00 "
            "(a time without one is ambiguous)"
        )
    try:
        ahead = (value - datetime.now(UTC)).total_seconds()
    except OverflowError:  # an offset that pushes year 1 or 9999 out of range
        ahead = math.inf
    if ahead > DELAY_MAX_S:
        raise argparse.ArgumentTypeError(f"{_shown(text)} is more than 100 years from now")
    return value
