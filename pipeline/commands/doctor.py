"""`pipeline doctor`: checks what the pipeline needs, and what plug-ins add (the
`pg_pipeline.checks` entry point group); exits 1 when anything is missing."""

from __future__ import annotations

import argparse
import os
from importlib.metadata import entry_points
from typing import Any

import psycopg

from pg_pipeline.blobs import blob_store_from_env
from pg_pipeline.commands.api import EXIT_FAILURE, EXIT_OK, Subcommands, add_command, printable
from pg_pipeline.db import connect, database_url, describe, listen_dsn, scrub
from pg_pipeline.migrate import pending_changes
from pg_pipeline.queries import Q

Check = tuple[str, bool, str]  #: (what, whether it is fine, the detail printed)


def add_commands(sub: Subcommands) -> None:
    add_command(sub, "doctor", run, "check PostgreSQL, LISTEN/NOTIFY, blob storage and plugins")


def run(args: argparse.Namespace) -> int:
    checks = _database_checks() + _blob_checks()
    for ep in entry_points(group="pg_pipeline.checks"):
        try:
            checks.extend(ep.load()())
        except Exception as exc:
            checks.append((ep.name, False, f"check failed to run: {exc}"))
    for name, ok, detail in checks:
        # A detail quotes exceptions and what servers and plug-ins answered.
        print(f"{'ok  ' if ok else 'FAIL'}  {printable(name):<16}{printable(detail)}")
    return EXIT_OK if all(ok for _, ok, _ in checks) else EXIT_FAILURE


def _database_checks() -> list[Check]:
    try:
        dsn = database_url()
        conn = connect(dsn)
    except Exception as exc:
        return [("postgres", False, scrub(str(exc), os.environ.get("DATABASE_URL")))]
    checks: list[Check] = []
    with conn:
        row = conn.execute(Q["server_version"]).fetchone()
        checks.append(("postgres", True, f"{describe(dsn)}, server {row[0] if row else '?'}"))
        behind = pending_changes(conn)
        checks.append(
            (
                "schema",
                not behind,
                f"migrations {behind} pending: run `pipeline migrate`" if behind else "up to date",
            )
        )
        checks.append(_listen_check(conn, dsn))
    return checks


def _listen_check(conn: psycopg.Connection[Any], dsn: str) -> Check:
    """LISTEN where the workers will: the direct PIPELINE_LISTEN_URL, or nowhere behind a
    transaction pooler (workers poll then, which works, only with less prompt wake-ups)."""
    target = listen_dsn(dsn)
    if target is None:
        return (
            "listen/notify",
            True,
            "skipped behind a transaction pooler: workers poll (set PIPELINE_LISTEN_URL to a "
            "direct DSN for wake-ups)",
        )
    token = os.urandom(8).hex()
    with connect(target) as listener:
        listener.execute(Q["doctor_listen"])
        conn.execute(Q["doctor_notify"], {"token": token})
        heard = [n.payload for n in listener.notifies(timeout=2, stop_after=1)]
    return (
        "listen/notify",
        heard == [token],
        "delivered"
        if heard == [token]
        else "no notification arrived: workers will fall back to polling",
    )


def _blob_checks() -> list[Check]:
    try:
        store = blob_store_from_env()
        key = store.put_bytes(b"pg-pipeline doctor probe\n")
        ok = store.read_bytes(key) == b"pg-pipeline doctor probe\n"
        return [("blob store", ok, store.describe())]
    except Exception as exc:
        return [("blob store", False, f"{type(exc).__name__}: {exc}")]
