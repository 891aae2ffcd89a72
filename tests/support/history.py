"""Finished jobs for tests: the history's partitions for past days, and jobs moved into the
history as the runtime moves them (one statement: out of pipeline.active_jobs, into
pipeline.job_history), with a status and finish time of the test's choosing."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import psycopg

from pg_pipeline.queries import Q

#: The columns of a job, in pipeline.job_history's order.
COLUMNS = (
    "id, type, tenant_id, payload, priority, status, attempts, max_attempts, run_after, "
    "leased_until, lease_seconds, worker_id, last_error, dedup_key, parent_id, root_id, "
    "join_id, created_at, started_at, finished_at, claims, suspect, crash_reclaims, releases, "
    "holds_slot"
)


def make_past_days(conn: psycopg.Connection[Any], days: int) -> None:
    """The history's partitions from `days` days ago (UTC) to today, those missing: a finished
    job can only be dated on a day that has one."""
    conn.execute(
        "SELECT pipeline.make_history_partitions("
        "(now() AT TIME ZONE 'UTC')::date - %s::integer, (now() AT TIME ZONE 'UTC')::date)",
        (days,),
    )


def finish(
    conn: psycopg.Connection[Any],
    ids: int | Iterable[int],
    status: str = "done",
    *,
    ago: str = "0 seconds",
    error: str | None = None,
) -> list[int]:
    """Move active jobs into the history as `status`, finished `ago` (an interval) before now;
    their day's partition must exist (make_past_days). Returns the ids moved."""
    ids = [ids] if isinstance(ids, int) else list(ids)
    rows = conn.execute(
        "WITH gone AS (DELETE FROM pipeline.active_jobs WHERE id = ANY(%(ids)s) RETURNING *) "
        f"INSERT INTO pipeline.job_history ({COLUMNS}) "
        "SELECT id, type, tenant_id, payload, priority, %(status)s, attempts, max_attempts, "
        "run_after, NULL, lease_seconds, worker_id, coalesce(%(error)s, last_error), dedup_key, "
        "parent_id, root_id, join_id, created_at, started_at, now() - %(ago)s::interval, "
        "claims, suspect, crash_reclaims, releases, false FROM gone RETURNING id",
        {"ids": ids, "status": status, "ago": ago, "error": error},
    ).fetchall()
    return [row[0] for row in rows]


def cancel(conn: psycopg.Connection[Any], job_id: int, reason: str | None = None) -> bool:
    """Cancel a queued or running job as `pipeline jobs cancel` does; False if it was neither."""
    return bool(conn.execute(Q["cancel"], {"id": job_id, "reason": reason}).fetchall())


#: The index a plan test names, as the hot table or the history's days call it now: a day's
#: index is named after the history's (job_history_20261202_tenant for job_history_tenant). A
#: window of finish or creation times reads the days it covers (partition pruning), by any of
#: their indexes: "job_history_", with no big sequential scan (big_seq_scans).
INDEX = {
    "jobs_pkey": "active_jobs_pkey",
    "jobs_tenant": "_tenant",
    "jobs_failed": "_failed",
    "jobs_created": "job_history_",
    "jobs_finished": "job_history_",
    "jobs_run": "_run",
}


def with_finished_span(conn: psycopg.Connection[Any], params: dict[str, Any]) -> dict[str, Any]:
    """jobs_list's parameters as pipeline.admin.jobs gives them: with a stage or an outcome,
    the finish times of the history it reads (jobs_finished_span)."""
    span: tuple[Any, Any] = (None, None)
    if params.get("stage") is not None or params.get("status") in ("done", "failed", "cancelled"):
        span = conn.execute(Q["jobs_finished_span"], params).fetchone() or span
    return params | {"finished_from": span[0], "finished_to": span[1]}


def pages_read(plan: str) -> int:
    """The pages the whole statement touched, in an EXPLAIN (ANALYZE, BUFFERS): the first
    Buffers line is the top node's, which counts its children's."""
    line = next(line for line in plan.splitlines() if "Buffers: shared" in line)
    return sum(int(part.split("=")[1]) for part in line.split() if "=" in part)


def big_seq_scans(plan: str, rows: int = 1000) -> list[str]:
    """The sequential scans in an EXPLAIN of the hot table or of a day of the history that read
    more than `rows` rows they did not want (an empty day is read whole: nothing).

    Run (ANALYZE) with a filter, a scan is judged by the rows its filter threw away: big when it
    threw away more than `rows` and more than it kept. A day that lies mostly inside a query's
    window (today, in the first hour after midnight, for the last hour's jobs) is cheapest read
    whole, and its rows are wanted. Otherwise, by the rows the planner expects it to return."""
    found = []
    nodes = re.split(r"\n(?=\s*->)", plan)
    for node in nodes:
        scan = re.search(r"Seq Scan on ((?:active_jobs|job_history)\w*)\b[^\n]*?rows=(\d+)", node)
        if scan is None:
            continue
        table, expected = scan.group(1), int(scan.group(2))
        kept = re.search(r"\(actual time=\S+ rows=([\d.]+) loops=(\d+)\)", node)
        if kept is not None and "Filter:" in node:
            removed = re.search(r"Rows Removed by Filter: (\d+)", node)
            # Both are shown per loop.
            loops = int(kept.group(2))
            thrown = float(removed.group(1)) * loops if removed else 0.0
            if thrown > rows and thrown > float(kept.group(1)) * loops:
                found.append(table)
        elif expected > rows:
            found.append(table)
    return found
