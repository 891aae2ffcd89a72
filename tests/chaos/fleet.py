"""Real `pipeline worker` processes for the chaos tests, each with a name, all cleaned up.

A worker runs in a process group of its own (tests/acceptance/cli.py), but the children that
run its suspect jobs start sessions of their own. So every process of a fleet carries a marker
in its environment: `leftovers()` finds what outlived its worker, and `close()` kills it all.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from pathlib import Path

from tests.acceptance.cli import WorkerProcess
from tests.support.apps.chaos_app import WORKER_ENV

FLEET_ENV = "CHAOS_FLEET"


class Fleet:
    def __init__(self, env: dict[str, str], log_dir: Path, *args: str) -> None:
        self.marker = uuid.uuid4().hex
        self.env = {**env, FLEET_ENV: self.marker}
        self.log_dir = log_dir
        self.args = args
        self.started: dict[str, WorkerProcess] = {}

    def start(self, name: str | None = None, *extra: str) -> tuple[str, WorkerProcess]:
        name = name or f"w{len(self.started)}"
        worker = WorkerProcess(
            {**self.env, WORKER_ENV: name}, self.log_dir / f"{name}.log", *self.args, *extra
        )
        self.started[name] = worker
        return name, worker

    def processes(self) -> dict[int, str]:
        """Live processes this fleet started, directly or not: {pid: worker name}."""
        mine = f"{FLEET_ENV}={self.marker}".encode()
        found: dict[int, str] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if mine not in environ or stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            names = [v for v in environ if v.startswith(f"{WORKER_ENV}=".encode())]
            found[int(entry.name)] = names[0].split(b"=", 1)[1].decode() if names else "?"
        return found

    def leftovers(self) -> dict[int, str]:
        """Processes of workers that are gone (a fork server, a job's child): {pid: worker}."""
        dead = {name for name, w in self.started.items() if not w.alive()}
        return {pid: name for pid, name in self.processes().items() if name in dead}

    def drain(self, workers: list[WorkerProcess], what: str) -> None:
        """Every one of `workers` is still alive after `what`, and stops cleanly on SIGTERM."""
        alive = [w.alive() for w in workers]
        assert all(alive), f"a worker exited after {what}: {alive}"
        for worker in workers:
            worker.signal(signal.SIGTERM)
        codes = [w.wait(timeout=60) for w in workers]
        assert codes == [0] * len(workers), "\n".join(self.log_tail(n) for n in self.started)

    def log_tail(self, name: str, lines: int = 30) -> str:
        return "\n".join(self.started[name].log().splitlines()[-lines:])

    def close(self) -> None:
        for worker in self.started.values():
            if worker.alive():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(worker.pid, signal.SIGKILL)  # a stopped one dies of it too
                worker.proc.wait(timeout=30)
            worker.close()
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
