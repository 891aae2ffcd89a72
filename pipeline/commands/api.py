"""What every `pipeline` command uses, the core ones and those packages add: exit codes, the
error that ends a command, the database, the app modules, and argument types.

This is the public surface for command plug-ins (the `pg_pipeline.commands` entry point group, how
the document stages add `submit`): a plug-in imports from here and from `pipeline`, nothing
else. What a command prints for people goes through `printable` (pipeline/terminal.py), so that
a tenant id or an error cannot steer the terminal; its JSON, through `printable_json` or
json.dumps. A command module has one shape: `add_commands(sub)` adds its parsers to the `pipeline`
parser's subcommands (`add_command` below gives each the same help and handler), and `run(args)`
runs it and returns the exit code.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeAlias, TypeVar

import psycopg

from pg_pipeline import apps, inputs
from pg_pipeline.apps import APP_ENV
from pg_pipeline.db import connect, database_url, describe, fit_to_pooler
from pg_pipeline.migrate import check_on_start, migrate
from pg_pipeline.terminal import printable, printable_json, printable_lines

#: The `pipeline` parser's subcommands, which a command module's `add_commands` adds to.
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

__all__ = [
    "APP_ENV",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "CliError",
    "Subcommands",
    "add_command",
    "argument",
    "budget_limit_arg",
    "cap_arg",
    "duration_arg",
    "instant_arg",
    "integer_arg",
    "job_id_arg",
    "load_apps",
    "log_level_arg",
    "open_db",
    "parse_payload",
    "printable",
    "printable_json",
    "printable_lines",
    "priority_arg",
    "seconds_arg",
    "share_arg",
    "stage_arg",
    "tenant_arg",
    "text_arg",
    "weight_arg",
]

T = TypeVar("T")

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
    # The pooler probe rides on the check for pending changes: one statement before the
    # command's own, not five (`pipeline status` answers sooner).
    conn = connect(dsn, probe_pooler=False)
    try:
        backend_pid, behind = check_on_start(conn)
        fit_to_pooler(conn, backend_pid)
    except BaseException:
        conn.close()
        raise
    if behind:
        if auto_migrate and os.environ.get("PIPELINE_AUTO_MIGRATE", "1") != "0":
            migrate(conn)
        else:
            conn.close()
            raise CliError(
                f"the database at {describe(dsn)} lacks migrations {behind}: run `pipeline migrate`"
            )
    return dsn, conn


def load_apps(modules: Sequence[str]) -> list[str]:
    """Load the apps named by --app (`modules`) and PIPELINE_APP, or else by the config file:
    a module path, or an installed app's name (`documents`); see pipeline/apps.py. Returns
    their names."""
    try:
        return apps.load_apps(modules)
    except apps.AppError as exc:
        raise CliError(str(exc)) from exc


def parse_payload(text: str) -> Any:
    """A payload given as JSON text, refused (exit 2) when jsonb could not store it."""
    try:
        return inputs.payload_text(text)
    except ValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


# -- argument types -----------------------------------------------------------------------------
# argparse runs these on every value, and on string defaults such as PIPELINE_LOG_LEVEL's, so bad
# input is a one-line usage error (exit 2) before anything is imported, connected or stored. The
# checks are pg_pipeline.inputs', the same the library and the dashboard use.


def argument(check: Callable[[str], T]) -> Callable[[str], T]:
    """`check` (one of pg_pipeline.inputs', or any that raises ValueError with its reason) as an
    argparse type: the reason becomes the usage error."""

    def parse(text: str) -> T:
        try:
            return check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = getattr(check, "__name__", "value")  # what argparse calls the value
    return parse


def integer_arg(low: int, high: int) -> Callable[[str], int]:
    return argument(partial(inputs.whole_number, low=low, high=high))


def seconds_arg(high: float = math.inf, *, above_zero: bool = False) -> Callable[[str], float]:
    return argument(partial(inputs.seconds, high=high, above_zero=above_zero))


def _priority(text: str) -> int:
    return inputs.priority(inputs.integer(text))


text_arg = argument(inputs.text)
tenant_arg = argument(inputs.tenant)
stage_arg = argument(inputs.stage_name)
job_id_arg = argument(inputs.job_id)
cap_arg = argument(inputs.cap)
weight_arg = argument(inputs.weight)
budget_limit_arg = argument(inputs.budget_limit)
share_arg = argument(inputs.share)
rest_arg = argument(inputs.rest)
priority_arg = argument(_priority)
duration_arg = argument(inputs.duration)
#: A time a job may start at: with a UTC offset, at most 100 years ahead.
instant_arg = argument(inputs.start_time)


def log_level_arg(text: str) -> str:
    level = text.strip().upper()
    if level not in logging.getLevelNamesMapping():
        names = ", ".join(("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
        raise argparse.ArgumentTypeError(
            f"unknown log level {inputs.shown(text)} (from --log-level or PIPELINE_LOG_LEVEL); "
            f"use one of {names}"
        )
    return level
