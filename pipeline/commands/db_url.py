"""`pipeline db-url`: the database URL in use, for psql and other tools."""

from __future__ import annotations

import argparse

from pg_pipeline.commands.api import EXIT_OK, Subcommands, add_command
from pg_pipeline.db import database_url


def add_commands(sub: Subcommands) -> None:
    add_command(
        sub, "db-url", run, "print the database URL in use (starts the embedded one if needed)"
    )


def run(args: argparse.Namespace) -> int:
    print(database_url())
    return EXIT_OK
