"""`pipeline migrate`: apply pending schema migrations."""

from __future__ import annotations

import argparse

from pg_pipeline.commands.api import EXIT_OK, Subcommands, add_command
from pg_pipeline.db import connect, database_url
from pg_pipeline.migrate import migrate


def add_commands(sub: Subcommands) -> None:
    add_command(sub, "migrate", run, "apply pending schema migrations (safe to run concurrently)")


def run(args: argparse.Namespace) -> int:
    with connect(database_url()) as conn:
        applied = migrate(conn)
    print(f"applied migrations {applied}" if applied else "schema is up to date")
    return EXIT_OK
