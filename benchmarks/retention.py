"""Workers draining beside a retention run: the drain's rate while `pipeline prune` drops a day
of the history, against its rate right after, in the same drain.

    python -m benchmarks.retention [--finished 10000000] [--days 10] [--rounds 3]
        [--jobs 20000] [--pgdata DIR]

Uses DATABASE_URL, or a throwaway embedded PostgreSQL. One database, loaded as benchmarks/scale.py
loads its `full` one: `--finished` finished jobs spread over `--days` UTC days of the history's
partitions (2 to days + 1 days ago), inside the server with generate_series, indexes built
after the rows, then VACUUM ANALYZE. Then `--rounds` times: real `pipeline worker` processes
drain a backlog kept fed, and `pipeline prune --older-than Nd` is started once they claim, N
chosen to drop the oldest day left (a day a round); the drain's rate while the prune process
runs (its start-up included) is set against its rate over as long a window right after it.
The cutoff is the end of that day (to the second, by the database's clock, when the round
starts), so that the prune drops the day whole and deletes next to nothing run by run: what is
measured is a day's drop, not `--older-than Nd`'s share of the next day, deleted run by run.
Prints each round and the median ratio (the bar: 0.9 or more).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import sys
import tempfile
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from benchmarks.scale import (
    drain_beside_prune,
    fresh_databases,
    load_history,
    load_said,
)
from pg_pipeline.embedded import embedded_url, stop_embedded

#: The loaded days end this many days before today (benchmarks/scale.py's plan_days default).
FIRST_AGO = 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.retention")
    p.add_argument("--finished", type=int, default=10_000_000, help="finished jobs loaded")
    p.add_argument("--days", type=int, default=10, help="days they are spread over")
    p.add_argument("--rounds", type=int, default=3, help="prunes, a day each, oldest first")
    p.add_argument("--jobs", type=int, default=20_000, help="backlog kept in the queue")
    p.add_argument("--pgdata", type=Path, help="the embedded server's data directory (new)")
    return p


def run(server: str, args: argparse.Namespace, home: Path) -> str:
    """The benchmark on `server` (a database of its own, made afresh); the report."""
    import benchmarks.bench_app  # noqa: F401  registers bench_noop

    if not 1 <= args.rounds <= args.days:
        raise SystemExit("--rounds: 1 to --days (a day pruned a round)")
    url = make_conninfo(server, dbname="bench_retention")
    version = fresh_databases(server, [url])
    print(f"PostgreSQL {version}; loading {args.finished:,} jobs over {args.days} days", flush=True)
    load = load_history(url, args.finished, args.days, 0, indexes_after=True)
    print(load_said(load), flush=True)
    lines, ratios = [], []
    for i in range(args.rounds):
        # The oldest day left is `ago` days back; it ends at the midnight ago - 1 days back.
        ago = FIRST_AGO + args.days - 1 - i
        with psycopg.connect(url, autocommit=True) as conn:
            [(since_end,)] = conn.execute(
                "SELECT floor(extract(epoch FROM now() - ((now() AT TIME ZONE 'UTC')::date "
                "- %s::integer)::timestamp AT TIME ZONE 'UTC'))::bigint",
                (ago - 1,),
            ).fetchall()
        older_than = f"{since_end}s"
        got = drain_beside_prune(url, args.jobs, older_than, home)
        ratio = got["beside_prune"] / got["after_prune"]
        ratios.append(ratio)
        lines.append(
            f"- round {i + 1}, `pipeline prune --older-than {older_than}` (one day, "
            f"{args.finished // args.days:,} jobs): {got['prune_s']:.1f} s; drain "
            f"{got['beside_prune']:,.0f} jobs/s beside it, {got['after_prune']:,.0f} after: "
            f"{ratio:.2f}x"
        )
        print(lines[-1], flush=True)
    return "\n".join(
        [
            f"PostgreSQL {version}; {args.finished:,} finished jobs over {args.days} days; "
            f"drain beside a prune of a day against right after it",
            "",
            *lines,
            "",
            f"median: {statistics.median(ratios):.2f}x (the bar: 0.90x)",
            "",
            load_said(load),
        ]
    )


def main() -> None:
    args = parser().parse_args()
    # A TERM (a timeout) ends the run through its `finally`: workers and the server stop.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    scratch = Path(tempfile.mkdtemp(prefix="pgretention-"))
    pgdata = args.pgdata or scratch / "pgdata"
    if args.pgdata and args.pgdata.exists():
        raise SystemExit(f"{args.pgdata} exists: the benchmark makes its own server there")
    external = os.environ.get("DATABASE_URL")
    try:
        report = run(external or embedded_url(pgdata), args, scratch / "home")
    finally:
        if not external:
            stop_embedded(pgdata)
        shutil.rmtree(scratch, ignore_errors=True)
        if args.pgdata:
            shutil.rmtree(args.pgdata, ignore_errors=True)
    print()
    print(report)


if __name__ == "__main__":
    main()
