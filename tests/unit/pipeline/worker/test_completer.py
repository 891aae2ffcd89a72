"""The Completer's threads without a database: what they do with nothing to write. Its writes
are tested against Postgres (tests/integration/pipeline/worker/test_completer.py)."""

from __future__ import annotations

import threading
from typing import cast

from pg_pipeline.store import JobStore
from pg_pipeline.worker.completer import Completer


def test_the_locked_rows_thread_with_no_job_sleeps_until_the_acknowledger_ends() -> None:
    """It waits for a job to be handed over, not for a halt it looks for every half second:
    once the acknowledger, the only one to hand any over, has ended, it ends too."""
    halt = threading.Event()
    # No statement is sent: the store is never used.
    c = Completer(cast(JobStore, None), halt=halt, retry_max_s=0.5, batch_max=10)
    locked = threading.Thread(target=c.run_locked, daemon=True)
    locked.start()
    try:
        c.close()
        c.run_acks()  # nothing buffered: returns at once
        locked.join(timeout=10)
        assert not locked.is_alive(), "the locked-rows thread outlived the acknowledger"
    finally:
        halt.set()
        locked.join(timeout=5)
