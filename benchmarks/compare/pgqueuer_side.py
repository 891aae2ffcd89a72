"""PgQueuer 1.x: workers run `pgqueuer.run` on uvloop (one asyncpg connection each)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.compare.sides import ChildSide, NotApplicable, WorkerConfig


class PgQueuerSide(ChildSide):
    module = "benchmarks.compare.pgqueuer_child"

    def __init__(self, python: Path, scratch: Path, drain_jobs: int) -> None:
        super().__init__(
            name="PgQueuer",
            prefix="pgq",
            # Finished jobs leave the queue table for pgqueuer_log: what is left is unfinished.
            remaining_sql="SELECT count(*) FROM pgqueuer",
            succeeded_sql="SELECT count(*) FROM pgqueuer_log WHERE status = 'successful'",
            drain_jobs=drain_jobs,
            scratch=scratch,
            notes=[
                "PgQueuer: workers run `pgqueuer.run(factory)` on uvloop, which is what `pgq run` "
                "does (the CLI itself fails with typer 0.29: it passes its default --log-level "
                "as a str); a `PgQueuer` over one asyncpg connection per process, as its docs "
                "show; entrypoints without concurrency limits; `--batch-size` is its throughput "
                "knob (default 10). It deletes finished jobs (moving them to pgqueuer_log), so "
                "the flatness figure does not apply.",
            ],
        )
        self.python = python

    def configs(self, quick: bool) -> list[WorkerConfig]:
        defaults = WorkerConfig("1 proc, defaults (batch 10)", 1, default=True)
        if quick:
            return [defaults, WorkerConfig("2 proc, batch 200", 2, ("--batch-size", "200"))]
        sweep = [
            WorkerConfig(f"{procs} proc, batch {batch}", procs, ("--batch-size", str(batch)))
            for procs in (1, 2)
            for batch in (10, 50, 200)
            if (procs, batch) != (1, 10)
        ]
        return [defaults, *sweep]

    def fill_finished(self, url: str, n: int) -> None:
        raise NotApplicable("deletes finished jobs by design")
