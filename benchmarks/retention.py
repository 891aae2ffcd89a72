"""Claim rate with a million finished rows in `jobs` against an empty table, before and after
a prune.

    python -m benchmarks.retention [--finished 1000000] [--jobs 20000] [--rounds 5] [--no-vacuum]

Uses DATABASE_URL, or a throwaway embedded PostgreSQL. Two databases on one server: `empty`
and `full` (the same schema, plus `--finished` finished rows in runs of 10, each run with a
join row and an output). Each round enqueues `--jobs` ready jobs in 8 tenants and claims them
all with one JobStore.claim caller, 100 at a time; only the claims are timed. Then the claimed
jobs are finished in `full` (it grows by `--jobs` finished rows a round) and `empty` is emptied.
Rounds alternate between the two databases, so that the machine's noise falls on both alike.
Then `full` is pruned with `pipeline prune`'s code (everything finished is older than the
cutoff; `--no-vacuum` leaves out the VACUUM that ends a large pass) and the rounds are run
again. Prints the median claim rate of each, and the ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pipeline.db import make_pool
from pipeline.embedded import embedded_url, stop_embedded
from pipeline.maintenance.retention import PRUNE_VACUUM_AFTER, prune
from pipeline.migrate import migrate
from pipeline.store import JobStore

CLAIM_BATCH = 100
TENANTS = 8
WEEK_S = 7 * 86_400.0


def fill_finished(url: str, rows: int) -> None:
    """`rows` finished jobs, 30 days old, in runs of 10: a root and 9 descendants, one join
    row per run and an output for its last job. Done mostly, some failed and cancelled."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            """
            INSERT INTO pipeline.jobs (type, tenant_id, payload, status, attempts, claims,
                created_at,
                              started_at, finished_at, root_id, parent_id, join_id, last_error)
            SELECT CASE WHEN g %% 10 = 0 THEN 'bench_root' ELSE 'bench_noop' END,
                   't' || (g / 10 %% 50),
                   jsonb_build_object('i', g),
                   CASE WHEN g %% 997 = 0 THEN 'failed' WHEN g %% 991 = 0 THEN 'cancelled'
                        ELSE 'done' END,
                   1, 1, t, t, t,
                   CASE WHEN g %% 10 <> 0 THEN g - g %% 10 + 1 END,
                   CASE WHEN g %% 10 <> 0 THEN g - g %% 10 + 1 END,
                   CASE WHEN g %% 10 <> 0 THEN g - g %% 10 + 1 END,
                   CASE WHEN g %% 997 = 0 THEN 'failed in the benchmark' END
            FROM generate_series(0, %(rows)s - 1) AS g,
                 LATERAL (SELECT now() - interval '30 days' + make_interval(secs => g * 0.001))
                     AS at(t)
            """,
            {"rows": rows},
        )
        # Ids start at 1, so job g above has id g + 1: the root of run k is id 10k + 1.
        conn.execute(
            """
            INSERT INTO pipeline.joins (id, root_id, total, done, finished_at)
            SELECT id, id, 9, 9, finished_at FROM pipeline.jobs WHERE type = 'bench_root'
            """
        )
        conn.execute(
            """
            INSERT INTO pipeline.outputs (root_id, stage, job_id, attempt, output)
            SELECT root_id, 'bench_noop', id, 1, '{"text": "output of the last job"}'
            FROM pipeline.jobs WHERE id % 10 = 0 AND root_id IS NOT NULL
            """
        )
        conn.execute("VACUUM ANALYZE pipeline.jobs")
        conn.execute("VACUUM ANALYZE pipeline.outputs")
        conn.execute("VACUUM ANALYZE pipeline.joins")


def claim_round(url: str, jobs: int, *, keep: bool) -> float:
    """Enqueue `jobs` ready jobs, claim them all in batches; jobs/s of the claims alone. Then
    the claimed jobs are finished, as a worker would (`keep`), or the table is emptied."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            """
            INSERT INTO pipeline.jobs (type, tenant_id, payload)
            SELECT 'bench_noop', 'r' || (g %% %(tenants)s), jsonb_build_object('i', g)
            FROM generate_series(1, %(jobs)s) AS g
            """,
            {"jobs": jobs, "tenants": TENANTS},
        )
        conn.execute("ANALYZE pipeline.jobs")
    pool = make_pool(url, max_size=1, name="pg-pipeline retention benchmark")
    store = JobStore(pool)
    worker = uuid.uuid4()
    claimed, spent = 0, 0.0
    try:
        while claimed < jobs:
            started = time.perf_counter()
            batch = store.claim(["bench_noop"], CLAIM_BATCH, worker)
            spent += time.perf_counter() - started
            if not batch:
                raise RuntimeError(f"claimed {claimed} of {jobs}, then nothing")
            claimed += len(batch)
    finally:
        pool.close()
    with psycopg.connect(url, autocommit=True) as conn:
        if keep:
            conn.execute(
                "UPDATE pipeline.jobs SET status = 'done', finished_at = now(), leased_until = "
                "NULL "
                "WHERE worker_id = %s",
                (worker,),
            )
        else:
            # Not DELETE: dead rows at the low end of the primary key slow the claim's planning
            # until a vacuum (see prune_vacuum), which would measure the cleanup, not the table.
            conn.execute("TRUNCATE pipeline.jobs, pipeline.tenant_slots")
    return claimed / spent


def alternate(urls: dict[str, str], jobs: int, rounds: int) -> dict[str, float]:
    rates: dict[str, list[float]] = {name: [] for name in urls}
    for i in range(rounds):
        order = list(urls) if i % 2 == 0 else list(urls)[::-1]
        for name in order:
            rates[name].append(claim_round(urls[name], jobs, keep=name != "empty"))
    for name, values in rates.items():
        print(f"  {name:<14}" + "  ".join(f"{v:>8,.0f}" for v in values) + "  jobs/s")
    return {name: statistics.median(values) for name, values in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-vacuum", action="store_true")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="pgr-"))
    server = os.environ.get("DATABASE_URL") or embedded_url(scratch / "pgdata")
    urls = {
        "empty": make_conninfo(server, dbname="bench_retention_empty"),
        "full": make_conninfo(server, dbname="bench_retention_full"),
    }
    try:
        with psycopg.connect(server, autocommit=True) as admin:
            for url in urls.values():
                name = conninfo_to_dict(url)["dbname"]
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                admin.execute(f'CREATE DATABASE "{name}"')
        for url in urls.values():
            with psycopg.connect(url, autocommit=True) as conn:
                migrate(conn)
        started = time.perf_counter()
        fill_finished(urls["full"], args.finished)
        print(f"{args.finished:,} finished rows written in {time.perf_counter() - started:.1f} s")

        print(f"claim rate, {args.jobs:,} ready jobs a round, {CLAIM_BATCH} per claim:")
        before = alternate(urls, args.jobs, args.rounds)

        with psycopg.connect(urls["full"], autocommit=True) as conn:
            started = time.perf_counter()
            vacuum_after = None if args.no_vacuum else PRUNE_VACUUM_AFTER
            report = prune(conn, WEEK_S, vacuum_after=vacuum_after)
            took = time.perf_counter() - started
        print(
            f"prune: {report.jobs:,} jobs, {report.outputs:,} outputs, {report.joins:,} joins "
            f"in {report.batches:,} batches, {took:.1f} s ({report.jobs / took:,.0f} jobs/s)"
            f"{', vacuum included' if report.vacuumed else ''}"
        )
        # Nothing else here: the claims run against whatever the prune left, as they would.
        after = alternate({"empty": urls["empty"], "pruned": urls["full"]}, args.jobs, args.rounds)
    finally:
        if not os.environ.get("DATABASE_URL"):
            stop_embedded(scratch / "pgdata")
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"median claim rate: empty {before['empty']:,.0f}, with {args.finished:,} finished rows "
        f"{before['full']:,.0f} jobs/s: ratio {before['full'] / before['empty']:.2f}"
    )
    print(
        f"after the prune: empty {after['empty']:,.0f}, pruned {after['pruned']:,.0f} jobs/s: "
        f"ratio {after['pruned'] / after['empty']:.2f}"
    )


if __name__ == "__main__":
    main()
