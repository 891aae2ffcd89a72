"""graphile-worker 0.18 (Node.js): workers are `run()` processes of node/graphile_worker.mjs.

Version: 0.18.0, the newest on npm when this was written (pinned in node/package.json with
Node.js 22.23.3); the local queue and batched completion it is tuned with came in 0.16.

Why these configurations:

- Defaults: one process with no options, which is what `graphile-worker` gives without tuning:
  concurrency 1, a pool of 10, LISTEN for new jobs with a 2 s poll behind it, one fetch and one
  completion statement per job, and an INFO line logged for every job that succeeds.
- Best documented: its performance page states its figures for one process with
  `concurrentJobs: 24`, `maxPoolSize: 25`, `localQueue: {size: 500}` (jobs fetched and locked
  500 at a time) and `completeJobBatchDelay: 0`, `failJobBatchDelay: 0` (completions batched
  into one statement), with `NO_LOG_SUCCESS=1` as its performance test sets. The sweep runs that
  preset in 1, 2 and 3 processes (its own test runs 4 instances on a bigger machine), and 2
  processes at concurrency 24 without the local queue and batching, to show what they bring.

It deletes a job when it completes, so the flatness figure does not apply; the jobs that
succeeded are the jobs ever added (the identity sequence) less the jobs still in the table.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.compare.node_side import NodeSide
from benchmarks.compare.sides import NotApplicable, WorkerConfig

JOBS = "graphile_worker._private_jobs"
PRESET = ("--concurrency", "24", "--pool", "25", "--local-queue", "500", "--batch-delay", "0")
QUIET = (("NO_LOG_SUCCESS", "1"),)  # what its performance test sets: no line per job


class GraphileWorkerSide(NodeSide):
    script = "graphile_worker.mjs"
    module = script

    def __init__(self, node: Path, scratch: Path, drain_jobs: int) -> None:
        super().__init__(
            name="graphile-worker",
            prefix="gw",
            # Completed jobs are deleted; a job that failed keeps its row with last_error set,
            # so leaving those out ends the drain and lets the count below show the failure.
            remaining_sql=f"SELECT count(*) FROM {JOBS} WHERE last_error IS NULL",
            succeeded_sql=(
                "SELECT coalesce(pg_sequence_last_value("
                f"pg_get_serial_sequence('{JOBS}', 'id')::regclass), 0)"
                f" - (SELECT count(*) FROM {JOBS})"
            ),
            drain_jobs=drain_jobs,
            scratch=scratch,
            notes=[
                "graphile-worker: `run()` with a task list in each Node.js process (what its "
                "CLI runs); defaults are concurrency 1, pool 10, poll 2 s with LISTEN, and a log "
                "line per completed job; tuned configs are its performance page's preset "
                "(concurrency 24, pool 25, localQueue 500, completeJobBatchDelay and "
                "failJobBatchDelay 0) with NO_LOG_SUCCESS=1 as its performance test sets. "
                "Enqueues: `addJob` one by one, `addJobs` in bulk (WorkerUtils). It deletes "
                "completed jobs, so the flatness figure does not apply.",
            ],
        )
        self.node = node

    def configs(self, quick: bool) -> list[WorkerConfig]:
        defaults = WorkerConfig("1 proc, defaults (c=1)", 1, default=True)

        def preset(procs: int) -> WorkerConfig:
            label = f"{procs} proc, c=24, localQueue 500, batched completion"
            return WorkerConfig(label, procs, PRESET, QUIET)

        if quick:
            return [defaults, preset(2)]
        plain = WorkerConfig("2 proc, c=24", 2, ("--concurrency", "24", "--pool", "25"), QUIET)
        return [defaults, preset(1), preset(2), preset(3), plain]

    def fill_finished(self, url: str, n: int) -> None:
        raise NotApplicable("deletes jobs as they complete")
