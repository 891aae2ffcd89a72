"""What one batch of the run-by-run prune costs the server, with many days of history.

    python -m benchmarks.prune_batches --reuse DIR [--older-than-days N] [--batches 60]
        [--batch 1000]

On a server that `python -m benchmarks.scale --pgdata DIR --keep --load-only` loaded (its `full`
database, migrated first), the batches of a prune pass with `--older-than N` days, walked as
retention walks them (pg_pipeline.maintenance.retention.prune) from the first job finished
before the cutoff, each in a transaction that is rolled back: the history is the same after a
run, and the runs before and after a change read the same rows. The days wholly before the
cutoff are not dropped (a pass drops them first): N should put the cutoff in the oldest day, as
the default does (the loader's oldest day is days + 1 days back).

For each batch, prune_lock_runs and then prune_runs: EXPLAIN (ANALYZE, BUFFERS, SUMMARY) in a
savepoint rolled back, for the planning and execution time and the buffers (shared hits and
reads, the planner's among them), then the statement itself, timed from the client. Prints
each statement's medians and 90th percentiles over the batches, the partitions of the history
its plan reads, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from pg_pipeline.embedded import embedded_url, stop_embedded
from pg_pipeline.maintenance.retention import pass_params
from pg_pipeline.migrate import migrate
from pg_pipeline.queries import Q

Conn = psycopg.Connection[Any]
STATEMENTS = ("prune_lock_runs", "prune_runs")


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def buffers(node: dict[str, Any]) -> int:
    return int(node.get("Shared Hit Blocks", 0)) + int(node.get("Shared Read Blocks", 0))


def partitions_read(node: dict[str, Any]) -> set[str]:
    """The history's days a plan reads (its scans of job_history_YYYYMMDD and the like)."""
    found = set()
    relation = str(node.get("Relation Name", ""))
    if relation.startswith("job_history_") and relation != "job_history_kept":
        found.add(relation)
    for child in node.get("Plans", []):
        found |= partitions_read(child)
    return found


def explained(conn: Conn, name: str, params: dict[str, Any]) -> dict[str, float]:
    """One statement's EXPLAIN (ANALYZE, BUFFERS) in a savepoint rolled back."""
    with conn.transaction(force_rollback=True):
        [(doc,)] = conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS, SUMMARY, FORMAT JSON) " + Q[name], params
        ).fetchall()
    plan = (doc if isinstance(doc, list) else json.loads(doc))[0]
    planning = plan.get("Planning", {})
    return {
        "planning_ms": float(plan["Planning Time"]),
        "execution_ms": float(plan["Execution Time"]),
        "buffers": float(buffers(plan["Plan"]) + buffers(planning)),
        "days": float(len(partitions_read(plan["Plan"]))),
    }


def timed(conn: Conn, name: str, params: dict[str, Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    rows = conn.execute(Q[name], params).fetchall()
    return (time.perf_counter() - started) * 1000, rows[0]


def run(url: str, older_than_days: float, batches: int, batch: int) -> str:
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in STATEMENTS}
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        [(cutoff,)] = conn.execute(
            Q["prune_cutoff"], {"older_than_s": older_than_days * 86_400}
        ).fetchall()
        started = time.perf_counter()
        params = pass_params(conn, cutoff, keep_failed=False)
        pass_ms = (time.perf_counter() - started) * 1000
        [(partitions,)] = conn.execute(
            "SELECT count(*) FROM pg_inherits WHERE inhparent = 'pipeline.job_history'::regclass"
        ).fetchall()
        after_id, done = 0, 0
        while done < batches:
            with conn.transaction(force_rollback=True):
                conn.execute(Q["prune_lock"])
                lock_params = params | {"after_id": after_id, "batch": batch}
                costs = explained(conn, "prune_lock_runs", lock_params)
                wall, (more, next_id, runs, locked) = timed(conn, "prune_lock_runs", lock_params)
                for key, value in (costs | {"wall_ms": wall}).items():
                    figures["prune_lock_runs"].setdefault(key, []).append(value)
                if runs:
                    runs_params = params | {"runs": runs, "locked": locked}
                    costs = explained(conn, "prune_runs", runs_params)
                    wall, _ = timed(conn, "prune_runs", runs_params)
                    for key, value in (costs | {"wall_ms": wall}).items():
                        figures["prune_runs"].setdefault(key, []).append(value)
            done += 1
            if not more:
                break
            after_id = next_id
    lines = [
        f"{done} batches of {batch} from the cutoff {cutoff:%Y-%m-%d %H:%M} UTC, {partitions}"
        f" days of history; the pass's own reads before them {pass_ms:.1f} ms;"
        f" load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "",
        "| statement | figure | median | p90 | min | max |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, by_figure in figures.items():
        for key, values in by_figure.items():
            lines.append(
                f"| {name} | {key} | {statistics.median(values):.1f} | "
                f"{percentile(values, 0.9):.1f} | {min(values):.1f} | {max(values):.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.prune_batches")
    parser.add_argument("--reuse", type=Path, required=True, help="a scale load's data directory")
    parser.add_argument("--older-than-days", type=float, default=100.0)
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    try:
        url = make_conninfo(embedded_url(args.reuse), dbname="bench_scale_full")
        print(run(url, args.older_than_days, args.batches, args.batch))
    finally:
        stop_embedded(args.reuse)


if __name__ == "__main__":
    main()
