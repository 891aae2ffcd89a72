"""One round of every figure, library by library; a failed measurement is recorded, not fatal."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.compare import measure, refs, server
from benchmarks.compare.cpu import Meter, wait_quiet
from benchmarks.compare.measure import Drain
from benchmarks.compare.results import Results
from benchmarks.compare.sides import NotApplicable, Side, WorkerConfig


def add_quiet_pct(parser: argparse.ArgumentParser) -> None:
    """--quiet-pct: how quiet the shared machine should be before each measurement."""
    parser.add_argument(
        "--quiet-pct",
        type=float,
        default=25,
        help="before each measurement, wait up to 30 s for other load below this %% of all cores",
    )


def say(message: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Sizes:
    drain: int  # jobs per drain
    slow_drain: int  # jobs per Procrastinate drain: at ~200 jobs/s, 20,000 would take minutes
    single: int
    bulk: int
    per_call: int
    wake: int
    wake_interval: float
    finished: int  # rows in the table for the flatness figure
    big: int  # tenant A's import, for fairness
    small: int
    pgbench_s: int
    polled: int  # jobs per drain of a configuration that runs one job per poll (pg-boss's defaults)


FULL = Sizes(20_000, 5_000, 2_000, 100_000, 1_000, 300, 0.02, 1_000_000, 10_000, 20, 5, 10)
QUICK = Sizes(2_000, 1_000, 300, 5_000, 1_000, 50, 0.02, 100_000, 2_000, 20, 2, 4)


@dataclass
class Runner:
    srv: server.Server
    sizes: Sizes
    results: Results
    scratch: Path
    quick: bool
    quiet_pct: float  # wait for other load below this before each measurement (% of all cores)

    def attempt(self, what: str, action: Callable[..., None], *args: Any) -> None:
        waited = wait_quiet(Meter([], self.srv.postmaster), max_other_pct=self.quiet_pct)
        say(
            what
            + (f" (after {waited:.0f} s waiting for a quieter machine)" if waited > 1.5 else "")
        )
        try:
            action(*args)
        except Exception as exc:
            logs = sorted(self.scratch.glob("*-worker.log"), key=lambda p: p.stat().st_mtime)
            tail = logs[-1].read_text(errors="replace")[-600:].strip() if logs else ""
            self.results.errors.append(f"{what}: {type(exc).__name__}: {exc}")
            say(f"  failed: {exc}" + (f"\n  last worker log lines:\n{tail}" if tail else ""))

    def prepare(self, sides: list[Side], figures: set[str]) -> None:
        """Templates: each library's schema; with flatness, a copy holding finished jobs."""
        for side in sides:
            side.install(self.srv.make_template(side.template))
            self.srv.seal_template(side.template)
            if "flatness" not in figures:
                continue
            full = f"{side.template}_full"
            say(f"template {full}: {self.sizes.finished:,} finished jobs")
            try:
                side.fill_finished(self.srv.make_template(full, side.template), self.sizes.finished)
            except NotApplicable as exc:
                self.results.not_applicable[(side.name, "flatness")] = str(exc)
            self.srv.seal_template(full)

    def round(self, sides: list[Side], figures: set[str]) -> None:
        for side in sides:
            if "drain" in figures:
                for config in side.configs(self.quick):
                    self.attempt(f"drain {side.name} {config.label}", self.drain, side, config)
            if "enqueue" in figures:
                self.attempt(f"enqueue one by one {side.name}", self.enqueue, side, None)
                self.attempt(f"enqueue bulk {side.name}", self.enqueue, side, self.sizes.per_call)
            if "wake" in figures:
                self.attempt(f"wake {side.name}", self.wake, side, side.wake_config(self.quick))
            if "flatness" in figures and (side.name, "flatness") not in self.results.not_applicable:
                flat = side.flat_config(self.quick)
                self.attempt(f"flatness {side.name}", self.flat, side, flat)
            if "fairness" in figures and side.name == "pg-pipeline":
                self.attempt("fairness pg-pipeline", self.fair, side)
        if "pgbench" in figures:
            self.attempt("pgbench", self.pgbench)

    def drain(self, side: Side, config: WorkerConfig) -> None:
        result = measure.drain(self.srv, side, config, config.jobs or side.drain_jobs)
        self.results.drains[(side.name, config.label)].append(result)
        say(
            f"  {result.jobs_s:,.0f} jobs/s, worker {result.worker_ms:.3f} ms/job, postgres "
            f"{result.postgres_ms:.3f} ms/job, other load {result.usage.other_busy_pct:.1f} %"
        )

    def enqueue(self, side: Side, per_call: int | None) -> None:
        n = self.sizes.single if per_call is None else self.sizes.bulk
        timed = measure.enqueue(self.srv, side, n, per_call)
        self.results.enqueues[(side.name, "single" if per_call is None else "bulk")].append(timed)
        say(f"  {timed.value:,.0f} jobs/s")

    def wake(self, side: Side, config: WorkerConfig) -> None:
        sizes = self.sizes
        values, usage = measure.wake(
            self.srv, side, config, sizes.wake, sizes.wake_interval, self.scratch
        )
        self.results.add_wake(side.name, values, usage)
        if not config.default:
            self.results.configs[(side.name, "wake")] = config.label
        p50, p95, p99 = self.results.wakes[side.name][-1]
        say(f"  p50 {p50:.2f} ms, p95 {p95:.2f} ms, p99 {p99:.2f} ms")

    def flat(self, side: Side, config: WorkerConfig) -> None:
        # Empty, full, full, empty: a drift of the machine's speed within the round (a third
        # within minutes here) would otherwise pass for a difference of the two tables.
        def drain(template: str) -> Drain:
            return measure.drain(self.srv, side, config, config.jobs or side.drain_jobs, template)

        if not config.default:
            self.results.configs[(side.name, "flatness")] = config.label
        full_template = f"{side.template}_full"
        first = drain(side.template), drain(full_template)
        full, empty = drain(full_template), drain(side.template)
        for pair in (first, (empty, full)):
            self.results.flat[side.name].append(pair)
            say(
                f"  empty {pair[0].jobs_s:,.0f} jobs/s, with {self.sizes.finished:,} finished "
                f"{pair[1].jobs_s:,.0f} jobs/s ({pair[1].jobs_s / pair[0].jobs_s:.2f})"
            )

    def fair(self, side: Side) -> None:
        sizes = self.sizes
        p99 = refs.fairness(self.srv, side.template, self.scratch / "home", sizes.big, sizes.small)
        self.results.fairness.append(p99)
        say(f"  B's p99 wait {p99:.1f} ms")

    def pgbench(self) -> None:
        tps = refs.pgbench(self.srv, self.scratch, [4, 16], self.sizes.pgbench_s)
        self.results.pgbench.append(tps)
        say(f"  {tps}")
