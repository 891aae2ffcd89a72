"""A real Worker in a thread of the test process, against a cloned database."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pg_pipeline import Worker, WorkerSettings
from pg_pipeline.stage import Registry


@contextmanager
def running_worker(
    db_url: str,
    stages: list[str],
    settings: WorkerSettings,
    *,
    expect_exit: int = 0,
    registry: Registry | None = None,
) -> Iterator[Worker]:
    """Runs until the block ends, then stops it and checks how it exited."""
    worker = Worker(db_url, registry=registry, stages=stages, settings=settings)
    exit_code: list[int] = []
    thread = threading.Thread(target=lambda: exit_code.append(worker.run()), daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(timeout=30)
        assert not thread.is_alive(), "worker did not stop"
    assert exit_code == [expect_exit], worker.fatal
