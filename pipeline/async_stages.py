"""Stages written as `async def`: run on one event loop per worker process, on a thread of its
own, while the job's runner thread waits for the result.

A stage that awaits (an HTTP call to an LLM, an S3 read with an async client) holds no thread
while it waits, so a worker's async stages overlap on the one loop; the runner thread still
holds the job's slot, so `--concurrency` bounds them as it bounds sync stages, and fencing,
heartbeats and the completion are the same code as for a sync stage.

A timeout, a cancel or a lost lease sets `ctx.lost_lease`: the runner sees it within
`POLL_S` and cancels the task, which raises `CancelledError` at the stage's next `await`.

The cost of a blocking call (`time.sleep`, a sync HTTP client, a sync database call such as
`ctx.outputs`) in an async stage: it stops the loop, and with it every other async stage of the
process, for as long as it lasts. Heartbeats, the claim loop and sync stages run on threads of
their own and go on; a job whose timeout passes meanwhile is settled as timed out and its slot
goes to a new runner thread as usual, but the task itself can only be cancelled once the
blocking call returns. Run blocking work with `await asyncio.to_thread(...)`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import threading
from collections.abc import Coroutine
from typing import Any

from pg_pipeline.errors import LeaseLost
from pg_pipeline.lazy_event import LazyEvent

#: How often a runner waiting for an async stage looks at its job's lost_lease.
POLL_S = 0.05

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_loop_pid = 0


def event_loop() -> asyncio.AbstractEventLoop:
    """The process's loop for async stages, started on first use (and again in a forked child,
    which inherits the loop but not the thread running it)."""
    global _loop, _loop_pid
    with _lock:
        if _loop is None or _loop_pid != os.getpid():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="pipeline-async-stages", daemon=True
            )
            thread.start()
            _loop, _loop_pid = loop, os.getpid()
        return _loop


def run_coroutine(coroutine: Coroutine[Any, Any, Any], lost_lease: LazyEvent, what: str) -> Any:
    """Run `coroutine` on the loop in a copy of the caller's context (the job's logging and
    tracing context go with it) and wait for its result; if `lost_lease` is set meanwhile,
    cancel it and raise LeaseLost."""
    loop = event_loop()
    result: concurrent.futures.Future[Any] = concurrent.futures.Future()
    tasks: list[asyncio.Task[Any]] = []

    def start() -> None:
        if result.cancelled():
            coroutine.close()
            return
        task = loop.create_task(coroutine)
        tasks.append(task)
        task.add_done_callback(lambda done: _settle(done, result))

    loop.call_soon_threadsafe(start, context=contextvars.copy_context())
    while True:
        try:
            return result.result(timeout=POLL_S)
        except concurrent.futures.TimeoutError:
            if lost_lease.is_set():
                result.cancel()  # a task not started yet never starts
                loop.call_soon_threadsafe(_cancel, tasks)
                raise LeaseLost(f"{what}: stopped (timed out, cancelled or lease lost)") from None


def _cancel(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        task.cancel()


def _settle(task: asyncio.Task[Any], result: concurrent.futures.Future[Any]) -> None:
    if not result.set_running_or_notify_cancel():
        return
    if task.cancelled():
        result.set_exception(asyncio.CancelledError())
    elif (exc := task.exception()) is not None:
        result.set_exception(exc)
    else:
        result.set_result(task.result())
