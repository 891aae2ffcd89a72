"""Run the real `pipeline` console script as subprocesses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO

APP = "tests.support.apps.jobs_app"


def pipeline_exe() -> list[str]:
    script = Path(sys.executable).parent / "pipeline"
    return [str(script)] if script.exists() else [sys.executable, "-m", "pg_pipeline.cli"]


def cli_env(db_url: str, home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": db_url,
            "PIPELINE_HOME": str(home),
            "PIPELINE_APP": APP,
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra)
    return env


def run_cli(
    env: dict[str, str],
    *args: str,
    timeout: float = 60,
    cwd: Path = REPO,
    exe: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`pipeline ARGS` (or `exe ARGS`: the CLI run another way, as tests.support.traced_cli)."""
    return subprocess.run(
        [*(exe or pipeline_exe()), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


class WorkerProcess:
    """`pipeline worker` in its own process group, its log in a file (a pipe could fill up)."""

    def __init__(self, env: dict[str, str], log: Path, *args: str, cwd: Path = REPO) -> None:
        self.log_path = log
        self._log = log.open("w")
        self.proc = subprocess.Popen(
            [
                *pipeline_exe(),
                "worker",
                "--reclaim-interval",
                "0.5",
                "--poll-interval",
                "0.2",
                *args,
            ],
            env=env,
            cwd=cwd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def log(self) -> str:
        return self.log_path.read_text()

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._log.flush()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self._log.close()
