"""pg-pipeline beside PgQueuer, Procrastinate, graphile-worker and pg-boss, in one run, on one
PostgreSQL.

    flock /tmp/bench.lock python -m benchmarks.compare [--quick] [--rounds N]
        [--only drain,enqueue,wake,flatness,fairness,pgbench,scale] [--libs pg-pipeline,...]
        [--scale-args "--finished 10000000"] [--out report.md]

Uses DATABASE_URL, or an embedded PostgreSQL in a scratch directory (fsync on). Every
measurement gets a fresh database, cloned from a template holding the library's schema.
Rounds rotate the libraries' order; the report gives medians (see report.py). `scale` is
pg-pipeline's own figures with millions of finished jobs in its history against an empty
database (benchmarks/scale.py, on the same server, once, after the rounds; --scale-args passes
it its options).

The Python competitors come from PyPI into a virtualenv of the benchmark (venv.py), the Node.js
ones (with Node.js 22 itself) from npm into a folder of the benchmark (nodejs.py); each is
installed on first use, only when its libraries are asked for.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.compare import nodejs, refs, report, server, venv
from benchmarks.compare.graphile_worker_side import GraphileWorkerSide
from benchmarks.compare.pgboss_side import PgBossSide
from benchmarks.compare.pgpipeline_side import PgPipelineSide
from benchmarks.compare.pgqueuer_side import PgQueuerSide
from benchmarks.compare.procrastinate_side import ProcrastinateSide
from benchmarks.compare.results import Results
from benchmarks.compare.runner import FULL, QUICK, Runner, Sizes, add_quiet_pct, say
from benchmarks.compare.sides import Side

FIGURES = ("drain", "enqueue", "wake", "flatness", "fairness", "pgbench", "scale")
#: The figures measured library by library in rounds (scale is pg-pipeline's alone, run once).
ROUND_FIGURES = frozenset(FIGURES) - {"scale"}
#: benchmarks.scale's options under --quick: a small history, one round.
QUICK_SCALE = (
    "--finished 100000 --day-volume 100000 --rounds 1 --jobs 5000 --wake-samples 50 --samples 3"
)
LIBS = ("pg-pipeline", "PgQueuer", "Procrastinate", "graphile-worker", "pg-boss")
PYTHON_LIBS = {"PgQueuer", "Procrastinate"}
NODE_LIBS = {"graphile-worker", "pg-boss"}


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare")
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 round, 2 configs")
    parser.add_argument("--rounds", type=int, help="rounds of every figure (default 2; quick 1)")
    parser.add_argument("--only", default=",".join(FIGURES), help="figures, comma-separated")
    parser.add_argument("--libs", default=",".join(LIBS), help="libraries, comma-separated")
    parser.add_argument("--drain-jobs", type=int, help="jobs per drain (default 20,000)")
    parser.add_argument(
        "--scale-args", default="", help="options of python -m benchmarks.scale, for --only scale"
    )
    add_quiet_pct(parser)
    parser.add_argument("--out", type=Path, help="also write the markdown report here")
    args = parser.parse_args()
    for flag, known in (("only", FIGURES), ("libs", LIBS)):
        unknown = set(getattr(args, flag).split(",")) - set(known)
        if unknown:
            parser.error(f"--{flag}: unknown {sorted(unknown)}; known: {', '.join(known)}")
    return args


def install(
    kind: str,
    make: Callable[[], Path],
    versions: Callable[[Path], dict[str, str]],
    notes: list[str],
) -> Path | None:
    """The interpreter of one kind of competitor, installed if needed (None if it could not be:
    a registry outage must not cost the other libraries' figures); notes the versions."""
    try:
        exe = make()
    except Exception as exc:
        notes.append(f"{kind} competitors skipped: they could not be installed ({exc})")
        return None
    notes.append(f"installed ({kind}): " + ", ".join(f"{k} {v}" for k, v in versions(exe).items()))
    return exe


def make_sides(scratch: Path, sizes: Sizes, wanted: list[str], notes: list[str]) -> list[Side]:
    sides: list[Side] = []
    if "pg-pipeline" in wanted:
        sides.append(PgPipelineSide(scratch, sizes.drain))
    if PYTHON_LIBS & set(wanted) and (exe := install("Python", venv.python, venv.versions, notes)):
        if "PgQueuer" in wanted:
            sides.append(PgQueuerSide(exe, scratch, sizes.drain))
        if "Procrastinate" in wanted:
            sides.append(ProcrastinateSide(exe, scratch, sizes.slow_drain))
    if NODE_LIBS & set(wanted) and (
        node := install("Node.js", nodejs.node, nodejs.versions, notes)
    ):
        if "graphile-worker" in wanted:
            sides.append(GraphileWorkerSide(node, scratch, sizes.drain))
        if "pg-boss" in wanted:
            sides.append(PgBossSide(node, scratch, sizes.drain, sizes.polled))
    return sides


def run_scale(url: str, scratch: Path, args: argparse.Namespace) -> str:
    """benchmarks.scale on the server at `url` (two databases of its own), its report."""
    from benchmarks import scale

    options = shlex.split(QUICK_SCALE if args.quick else "") + shlex.split(args.scale_args)
    return scale.run(url, scale.parser().parse_args(options), scratch / "scale-home")


def main() -> None:
    args = parse()
    sizes = QUICK if args.quick else FULL
    if args.drain_jobs:
        sizes = dataclasses.replace(sizes, drain=args.drain_jobs)
    rounds = args.rounds or (1 if args.quick else 2)
    figures = set(args.only.split(","))
    scratch = Path(tempfile.mkdtemp(prefix="pgcompare-"))
    notes: list[str] = []
    results = Results()
    started = time.monotonic()
    srv = server.start(scratch)
    sides: list[Side] = []
    command = " ".join(["python -m benchmarks.compare", *sys.argv[1:]])
    text = f"`{command}`, PostgreSQL {srv.version} {srv.settings}"
    try:
        if figures & ROUND_FIGURES:
            sides = make_sides(scratch, sizes, args.libs.split(","), notes)
            if not sides:
                raise SystemExit("no library to measure: " + "; ".join(notes))
            say(f"PostgreSQL {srv.version} {srv.settings}; libraries {[s.name for s in sides]}")
        runner = Runner(srv, sizes, results, scratch, args.quick, args.quiet_pct)
        runner.prepare(sides, figures)
        if "pgbench" in figures:
            say("pg_test_fsync")
            results.fdatasync_us = refs.fdatasync_us(srv, scratch)
        for r in range(rounds if sides else 0):
            order = sides[r % len(sides) :] + sides[: r % len(sides)]
            say(f"round {r + 1} of {rounds}: {[s.name for s in order]}")
            runner.round(order, figures)
            text = report.render(
                results,
                sides,
                srv,
                sizes,
                command,
                r + 1,
                time.monotonic() - started,
                notes,
                args.quick,
            )
            if args.out:  # after every round, so that a run cut short still leaves figures
                args.out.write_text(text)
        if "scale" in figures:
            say("scale: pg-pipeline with millions of finished jobs against an empty database")
            text += "\n\n## Flat at scale (pg-pipeline)\n\n" + run_scale(srv.url, scratch, args)
            if args.out:
                args.out.write_text(text)
        print(text)
    finally:
        try:
            srv.stop([t for s in sides for t in (s.template, f"{s.template}_full")])
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
