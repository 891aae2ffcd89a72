"""A real PgBouncer (Debian's `pgbouncer`, installed by scripts/setup.sh) in transaction mode,
in front of the test server, for the whole session."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.support.waiting import wait_for


@dataclass(frozen=True)
class PgBouncer:
    port: int
    log: Path

    def url(self, direct: str) -> str:
        """The database and user of `direct`, through PgBouncer."""
        return make_conninfo(direct, host="127.0.0.1", port=str(self.port))


def _executable() -> str:
    # Debian installs it in /usr/sbin, which is not on a normal user's PATH.
    found = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")
    if found is None:
        pytest.fail("pgbouncer is not installed: run scripts/setup.sh (apt-get install pgbouncer)")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _run_as(server_host: str) -> str | None:
    """PgBouncer refuses to run as root. It must reach the server's socket directory, which the
    embedded server (run as a user of its own when we are root) keeps private to its owner."""
    if os.geteuid() != 0:
        return None
    if server_host.startswith("/") and Path(server_host).is_dir():
        owner = pwd.getpwuid(Path(server_host).stat().st_uid).pw_name
        if owner != "root":
            return owner
    return "nobody"


def _config(server: str, scratch: Path, port: int) -> Path:
    parts = conninfo_to_dict(server)
    host = str(parts.get("host") or "")
    target = " ".join(
        f"{key}={value}"
        for key, value in (("host", host), ("port", str(parts.get("port") or "5432")))
        if value
    )
    user = str(parts.get("user") or pwd.getpwuid(os.getuid()).pw_name)
    password = str(parts.get("password") or "")
    # PgBouncer logs in to the server with the auth file's password; clients it trusts.
    (scratch / "userlist.txt").write_text(f'"{user}" "{password}"\n')
    ini = scratch / "pgbouncer.ini"
    ini.write_text(
        f"""[databases]
* = {target}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {scratch / "userlist.txt"}
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
; Its server sessions then show "<name> - 127.0.0.1:<port>": a test can tell them from direct ones.
application_name_add_host = 1
"""
    )
    return ini


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="session")
def pgbouncer(server_url: str) -> Iterator[PgBouncer]:
    exe = _executable()
    scratch = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
    port = _free_port()
    ini = _config(server_url, scratch, port)
    user = _run_as(str(conninfo_to_dict(server_url).get("host") or ""))
    if user is not None:
        entry = pwd.getpwnam(user)
        for path in (scratch, *scratch.iterdir()):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    log = scratch / "pgbouncer.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [exe, str(ini)],
            user=user,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        wait_for(
            lambda: proc.poll() is not None or _accepts(port),
            timeout=15,
            what="pgbouncer to listen",
        )
        if proc.poll() is not None:
            pytest.fail(f"pgbouncer exited with {proc.returncode}:\n{log.read_text()}")
        yield PgBouncer(port=port, log=log)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # immediate shutdown: the tests are over
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)
