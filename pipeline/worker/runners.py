"""The runner threads. A job that overstays its timeout (or is cancelled) while its thread is
stuck in code that cannot be interrupted gives up its slot at once: a replacement thread takes
it, and the stuck one exits whenever the stage returns. Too many stuck threads mean the process
should be restarted, and the worker is told so."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Protocol

from pg_pipeline.worker.inflight import InFlight

log = logging.getLogger(__name__)


class Executor(Protocol):
    """What the runner threads serve (pipeline/worker/job_executor.py's JobExecutor)."""

    def execute(self, entry: InFlight) -> None:
        """Run the job and settle it."""

    def let_go(self, entry: InFlight) -> None:
        """execute() failed on the job (a bug): leave it to reclaim."""


class Runners:
    def __init__(
        self, *, count: int, max_abandoned: int, on_too_many: Callable[[str], None]
    ) -> None:
        self._executor: Executor | None = None
        self._count = count
        self._max_abandoned = max_abandoned
        self._on_too_many = on_too_many
        self._todo: queue.SimpleQueue[InFlight | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._abandoned = 0  # threads still stuck in a job they no longer own
        self._serial = 0
        self._live = 0

    @property
    def abandoned(self) -> int:
        with self._lock:
            return self._abandoned

    def start(self, executor: Executor) -> None:
        """Start the threads, each running the jobs submitted, one at a time, with executor."""
        self._executor = executor
        for _ in range(self._count):
            self._spawn()

    def submit(self, entry: InFlight) -> None:
        self._todo.put(entry)

    def replace(self, entry: InFlight) -> None:
        """entry's thread no longer owns it: start a thread for its slot."""
        with self._lock:
            if entry.thread_done:
                return  # its thread came back meanwhile and serves the next job
            entry.replaced = True
            self._abandoned += 1
            stuck = self._abandoned
        log.warning(
            "job %s (%s): its thread is still in the stage; a new thread takes its slot "
            "(%d stuck thread(s))",
            entry.job.id,
            entry.job.type,
            stuck,
        )
        if stuck > self._max_abandoned:
            self._on_too_many(
                f"{stuck} stage threads ignored their timeout or cancel and are still running "
                f"(limit {self._max_abandoned}); stopping so that a supervisor restarts this "
                "process and frees them"
            )
        self._spawn()

    def stop(self) -> None:
        with self._lock:
            live = self._live
        for _ in range(live):
            self._todo.put(None)

    def _spawn(self) -> None:
        with self._lock:
            self._serial += 1
            self._live += 1
            name = f"pipeline-runner-{self._serial}"
        threading.Thread(target=self._loop, name=name, daemon=True).start()

    def _loop(self) -> None:
        while True:
            entry = self._todo.get()
            if entry is None:
                with self._lock:
                    self._live -= 1
                return
            executor = self._executor
            assert executor is not None, "a job was taken before start()"
            try:
                executor.execute(entry)
            except BaseException:  # never lose a runner to a bug; the job is left to reclaim
                log.exception("job %s: runner failed; leaving the job to reclaim", entry.job.id)
                try:
                    executor.let_go(entry)
                except BaseException:
                    log.exception("job %s: could not let go of the job", entry.job.id)
            with self._lock:
                entry.thread_done = True
                if entry.replaced:
                    # Replaced while stuck in this job: the replacement holds the slot now.
                    self._abandoned -= 1
                    self._live -= 1
                    return
