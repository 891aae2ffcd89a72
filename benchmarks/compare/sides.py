"""What the benchmark asks of each library: its schema, its workers, its enqueue paths."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.compare.venv import REPO


@dataclass(frozen=True)
class WorkerConfig:
    """One way to run a library's workers: `processes` of them, each with `args`."""

    label: str
    processes: int
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    default: bool = False  # the library's defaults: what a user gets without tuning
    jobs: int | None = None  # jobs per drain, when not the side's (a polling-bound config)


class NotApplicable(Exception):
    """This figure has no meaning for this library (the message says why)."""


@dataclass
class Side(ABC):
    """One library under test. Databases are URLs; workers are subprocesses."""

    name: str
    prefix: str  # of the databases made for it
    remaining_sql: str  # how many jobs are neither finished nor failed, index-backed
    succeeded_sql: str  # how many jobs succeeded: a drain checks that all of them did
    drain_jobs: int
    scratch: Path
    notes: list[str] = field(default_factory=list)

    @property
    def template(self) -> str:
        return f"tpl_{self.prefix}"

    @abstractmethod
    def install(self, url: str) -> None:
        """Create the library's schema in an empty database."""

    @abstractmethod
    def configs(self, quick: bool) -> list[WorkerConfig]:
        """The defaults first, then the sweep."""

    def default_config(self, quick: bool) -> WorkerConfig:
        return next(c for c in self.configs(quick) if c.default)

    def wake_config(self, quick: bool) -> WorkerConfig:
        """The workers the wake figure idles: the defaults, unless they cannot wake at all."""
        return self.default_config(quick)

    def flat_config(self, quick: bool) -> WorkerConfig:
        """The workers of the flatness figure: the defaults, unless they are polling-bound."""
        return self.default_config(quick)

    @abstractmethod
    def start_workers(
        self, url: str, config: WorkerConfig, latency_file: Path | None = None
    ) -> list[subprocess.Popen[bytes]]:
        """Start the workers; with `latency_file`, its wake stage appends its latencies there."""

    @abstractmethod
    def enqueue_drain(self, url: str, n: int, on_commit: Callable[[], None]) -> float:
        """Insert `n` no-op jobs in one transaction; returns time.time() just after it commits.

        `on_commit` is called as soon as the commit is known, before anything is cleaned up.
        """

    @abstractmethod
    def enqueue_single(self, url: str, n: int) -> float:
        """Seconds to enqueue `n` jobs one call (and one transaction) each."""

    @abstractmethod
    def enqueue_bulk(self, url: str, n: int, per_call: int) -> float:
        """Seconds to enqueue `n` jobs, `per_call` per call (one transaction each)."""

    @abstractmethod
    def send_wake(self, url: str, samples: int, interval: float) -> None:
        """Enqueue one wake job every `interval` s, each carrying time.time() at its enqueue."""

    @abstractmethod
    def fill_finished(self, url: str, n: int) -> None:
        """Add `n` finished jobs, as a long-running queue has (NotApplicable if it keeps none)."""


def stop(procs: list[subprocess.Popen[bytes]], timeout: float = 60) -> None:
    """SIGTERM every worker, then wait; one that will not stop is killed."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class ChildSide(Side):
    """A library whose commands are a child script's: one in the benchmark's venv here."""

    python: Path
    module: str  # benchmarks.compare.<lib>_child

    def command(self, *args: str) -> list[str]:
        """The child script's command line for `args` (a command and its options)."""
        return [str(self.python), "-m", self.module, *args]

    def child_env(self, url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {**os.environ, "BENCH_DSN": url, "PYTHONPATH": str(REPO), **(extra or {})}

    def child(self, url: str, *args: str) -> dict[str, float]:
        """Run one command of the child script; returns the last JSON object it printed."""
        done = subprocess.run(
            self.command(*args),
            env=self.child_env(url),
            cwd=REPO,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=900,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{self.module} {args[0]} failed: {done.stderr.strip()[-3000:]}")
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        result: dict[str, float] = json.loads(lines[-1]) if lines else {}
        return result

    def install(self, url: str) -> None:
        self.child(url, "install")

    def enqueue_drain(self, url: str, n: int, on_commit: Callable[[], None]) -> float:
        # Streamed: the workers start on the commit, so the CPU meter must not wait for the
        # child script to close its connection and exit.
        with subprocess.Popen(
            self.command("drain", "--n", str(n)),
            env=self.child_env(url),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        ) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith("{"):
                    committed = float(json.loads(line)["committed"])
                    on_commit()
                    break
            else:
                raise RuntimeError(f"{self.module} drain exited {proc.wait()} without committing")
        return committed

    def enqueue_single(self, url: str, n: int) -> float:
        return self.child(url, "single", "--n", str(n))["seconds"]

    def enqueue_bulk(self, url: str, n: int, per_call: int) -> float:
        return self.child(url, "bulk", "--n", str(n), "--per-call", str(per_call))["seconds"]

    def send_wake(self, url: str, samples: int, interval: float) -> None:
        self.child(url, "wake", "--n", str(samples), "--interval", str(interval))

    def start_workers(
        self, url: str, config: WorkerConfig, latency_file: Path | None = None
    ) -> list[subprocess.Popen[bytes]]:
        return self.spawn(self.command("worker", *config.args), url, config, latency_file)

    def spawn(
        self, argv: list[str], url: str, config: WorkerConfig, latency_file: Path | None
    ) -> list[subprocess.Popen[bytes]]:
        extra = dict(config.env)
        if latency_file is not None:
            extra["BENCH_LATENCY_FILE"] = str(latency_file)
        log = (self.scratch / f"{self.prefix}-worker.log").open("ab")
        return [
            subprocess.Popen(
                argv,
                env=self.child_env(url, extra),
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
            for _ in range(config.processes)
        ]
