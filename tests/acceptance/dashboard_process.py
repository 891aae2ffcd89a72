"""`pipeline dashboard` as a subprocess on a free loopback port, for the tests that talk to the
real server (uvicorn) rather than to the app through Starlette's TestClient."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.acceptance.cli import REPO, pipeline_exe
from tests.support.waiting import wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(url: str) -> bool:
    """Whether the dashboard at `url` serves its overview (a token, if any, is not set here:
    a redirect to /login counts, it is being served)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def served_dashboard(env: dict[str, str], log: Path, *args: str) -> Iterator[str]:
    """The dashboard's base URL while it runs with `args`; stopped afterwards."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*pipeline_exe(), "dashboard", "--port", str(port), *args],
            env=env,
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_for(
                lambda: answers(url + "/login") or proc.poll() is not None,
                what="the dashboard",
                timeout=60,
            )
            assert proc.poll() is None, log.read_text()
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=30)
