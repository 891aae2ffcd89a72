"""Emptying the tables between a benchmark's drains, so that each drain starts from the state
the first one found: one list, for every benchmark that drains more than once or starts from
a database an earlier run wrote (tests/integration/benchmarks/test_reset.py drains what they
drain and checks that every table written is back)."""

from __future__ import annotations

from typing import Any

import psycopg

#: Each table goes by name: pipeline.jobs is a view over the hot table and the history.
EMPTIED = (
    # the jobs, queued or running, finished, and kept past their retention
    "pipeline.active_jobs",
    "pipeline.job_history",
    "pipeline.job_history_kept",
    # what finishing jobs write: the idempotency keys, the outputs and the joins waiting on them
    "pipeline.dedup_keys",
    "pipeline.outputs",
    "pipeline.joins",
    # the tenants' slot counters with the slots given back (subtracted from the counters: else
    # a capped drain starts by folding the previous drain's, a binding cap's some thousand
    # rows), and their passes (else a drain updates the rows the one before inserted)
    "pipeline.tenant_slots",
    "pipeline.freed_slots",
    "pipeline.tenant_passes",
    # the rollups the finishing jobs count into (the same: updates for inserts)
    "pipeline.finished_by_minute",
    "pipeline.tenant_finished_by_minute",
    "pipeline.usage_by_day",
    # the units the rate limits charged
    "pipeline.rate_limit_used",
    # settings a benchmark makes after the reset, for one drain: caps and limits (tenants'
    # backlog pauses a tenant with a cap of 0; flow sets a limit per drain). Not the tenants'
    # weights: fairness sets them once for both its windows, and flow sets or clears them
    # before every drain.
    "pipeline.tenant_caps",
    "pipeline.rate_limits",
)

RESET = "TRUNCATE " + ", ".join(EMPTIED)


def reset(conn: psycopg.Connection[Any]) -> None:
    """Empty every table a drain writes (EMPTIED); `conn` in autocommit, no worker running."""
    conn.execute(RESET)
