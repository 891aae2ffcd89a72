"""What deleting runs' blob references adds to a prune (pipeline.blob_refs, migration 0029).

    python -m benchmarks.prune_blobs [--runs 100000] [--rounds 3] [--without-refs-only]

Uses DATABASE_URL, or a throwaway embedded PostgreSQL. Each round loads `--runs` finished runs
of one job twice, and prunes each load with `prune()`: once dated on a day wholly past the
cutoff (the day is dropped whole: pipeline.drop_history_partition), once on the day that holds
the cutoff, before it (deleted run by run: prune_lock_runs and prune_runs, 1,000 jobs a batch);
alternately with a blob reference per run (what an app whose every job names a blob has, the
document pipeline's) and without any (an app without blobs). Prints each prune's seconds, and
the CPU seconds of its server backend beside (from /proc: the server must run on this machine),
less noisy on a shared machine; the sweep is not timed (no store is asked: the blobs are not
the point).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import psycopg

from benchmarks.enqueue_blobs import backend_cpu_s
from benchmarks.server import benchmark_server
from pg_pipeline.maintenance.retention import prune
from pg_pipeline.migrate import migrate

WEEK = 7 * 86_400.0
#: finished_at of each load: a day wholly past a week's cutoff, and the cutoff's own day before
#: the cutoff (halfway between the day's start and the cutoff, as the retention tests date it)
WHEN = {
    "day": "now() - interval '9 days'",
    "runs": "now() - interval '7 days' "
    "- (now() - (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')) / 2",
}


def load(conn: psycopg.Connection[Any], runs: int, when: str, refs: bool) -> None:
    rows = conn.execute(
        "INSERT INTO pipeline.job_history (type, status, attempts, payload, finished_at) "
        "SELECT 'noop', 'done', 1, jsonb_build_object('blob_key', 'sha256/' || "
        "left(h, 2) || '/' || h), " + when + " FROM (SELECT encode(sha256((g || random()::text)"
        "::bytea), 'hex') AS h FROM generate_series(1, %s) AS g) AS s RETURNING id",
        (runs,),
    ).fetchall()
    if refs:
        conn.execute(
            "INSERT INTO pipeline.blob_refs (blob_key, run_id) "
            "SELECT j.payload->>'blob_key', j.id FROM pipeline.job_history AS j "
            "WHERE j.id = ANY(%s)",
            ([r[0] for r in rows],),
        )
    conn.execute("VACUUM ANALYZE pipeline.blob_refs")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.prune_blobs")
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--without-refs-only",
        action="store_true",
        help="only the loads without references (to set this commit's prune against another's)",
    )
    args = parser.parse_args()
    with benchmark_server("pgprune-") as url, psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        for round_ in range(1, args.rounds + 1):
            for refs in (False,) if args.without_refs_only else (False, True):
                said = []
                for path, when in WHEN.items():
                    conn.execute(
                        "SELECT pipeline.make_history_partitions("
                        "(now() AT TIME ZONE 'UTC')::date - 10, "
                        "(now() AT TIME ZONE 'UTC')::date)"
                    )
                    load(conn, args.runs, when, refs)
                    conn.execute("CHECKPOINT")
                    started = time.perf_counter()
                    server = backend_cpu_s(conn.info.backend_pid)
                    report = prune(conn, WEEK, vacuum_after=None)
                    took = time.perf_counter() - started
                    cpu = backend_cpu_s(conn.info.backend_pid) - server
                    assert report.jobs == args.runs, report
                    conn.execute("TRUNCATE pipeline.blob_garbage")
                    said.append(f"{path} {took:.2f} s (server CPU {cpu:.2f} s)")
                what = "a reference a run" if refs else "no references"
                print(f"round {round_}, {what}: " + ", ".join(said), flush=True)


if __name__ == "__main__":
    main()
