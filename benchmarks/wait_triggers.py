"""What the durable waits' row triggers cost the hot path, which never waits: status updates
(a claim, a requeue) and deletes (a completion) of rows that are not 'waiting', with the two
triggers enabled and disabled in alternating rounds on the same table.

    python -m benchmarks.wait_triggers [--rows 50000] [--rounds 12]

Uses DATABASE_URL, or a throwaway embedded PostgreSQL; works in a database of its own, dropped
at the end. Prints the median of each statement per row, triggers on and off.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pg_pipeline.embedded import embedded_url, stop_embedded
from pg_pipeline.migrate import migrate

TRIGGERS = ("active_jobs_count_waits", "active_jobs_count_waits_deleted")
STATEMENTS = {
    "requeue": "UPDATE pipeline.active_jobs SET status = 'queued'",
    "claim": "UPDATE pipeline.active_jobs SET status = 'running'",
    "complete": "DELETE FROM pipeline.active_jobs",
}


def measure(url: str, rows: int, rounds: int) -> dict[bool, dict[str, list[float]]]:
    times: dict[bool, dict[str, list[float]]] = {
        on: {s: [] for s in STATEMENTS} for on in (True, False)
    }
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        for r in range(rounds):
            on = r % 2 == 0
            for trigger in TRIGGERS:
                verb = "ENABLE" if on else "DISABLE"
                conn.execute(f"ALTER TABLE pipeline.active_jobs {verb} TRIGGER {trigger}")
            conn.execute("TRUNCATE pipeline.active_jobs")
            conn.execute(
                "INSERT INTO pipeline.active_jobs (type, status, claims, attempts)"
                " SELECT 'noop', 'running', 1, 1 FROM generate_series(1, %s)",
                (rows,),
            )
            conn.execute("VACUUM ANALYZE pipeline.active_jobs")
            for name, sql in STATEMENTS.items():
                started = time.perf_counter()
                conn.execute(sql)
                times[on][name].append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    home = None
    url = os.environ.get("DATABASE_URL")
    if url is None:
        home = Path(tempfile.mkdtemp(prefix="pgp-bench-"))
        url = embedded_url(home)
    own = make_conninfo(url, dbname="wait_triggers_bench")
    try:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("DROP DATABASE IF EXISTS wait_triggers_bench")
            admin.execute("CREATE DATABASE wait_triggers_bench")
        try:
            times = measure(own, args.rows, args.rounds)
        finally:
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute("DROP DATABASE IF EXISTS wait_triggers_bench")
    finally:
        if home is not None:
            stop_embedded(home)
            shutil.rmtree(home, ignore_errors=True)
    print(f"{args.rows:,} rows, {args.rounds} rounds, on {conninfo_to_dict(url).get('host')}")
    for name in STATEMENTS:
        on = statistics.median(times[True][name]) / args.rows * 1e6
        off = statistics.median(times[False][name]) / args.rows * 1e6
        print(f"{name:9} on {on:6.3f} us/row  off {off:6.3f} us/row  diff {on - off:+.3f}")


if __name__ == "__main__":
    main()
