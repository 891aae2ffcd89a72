"""What operators read and change, for every surface: `pipeline status`/`jobs`/`tenants`, the
dashboard and the queue gauges of a worker's /metrics all go through here, not through SQL of
their own.

Every read and change takes `tenant`: None for every tenant, else that tenant's rows alone, in
every statement (how a dashboard's tenant token is kept to its tenant). `status.py` holds the
queue's figures (one snapshot of the monitoring views), `jobs.py` and `runs.py` the jobs one by
one, `tenants.py` caps and per-tenant load, `schedules.py` pausing and resuming, `metrics.py`
the figures as Prometheus gauges, `waits.py` the waits a signal answers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pg_pipeline.admin.waits import WaitTask, get_wait, list_waits

__all__ = ["WaitTask", "get_wait", "list_waits"]


def __getattr__(name: str) -> Any:
    """waits.py's names, imported on first use: importing `pg_pipeline.admin.status` (`pipeline
    status`) runs this module, and needs none of them."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.waits"), name)
    globals()[name] = value
    return value
