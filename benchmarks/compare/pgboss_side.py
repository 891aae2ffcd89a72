"""pg-boss 12 (Node.js): workers are one `PgBoss` instance with `work()` per process.

Version: 12.38.0, the newest on npm when this was written (pinned in node/package.json with
Node.js 22.23.3; it needs Node.js 22.12 or later, hence Node.js from npm rather than the
machine's). The tuned configurations use options of the 12.x line (`localConcurrency`,
`burstWhenBatchFull`, `useListenNotify`) where version 9 had `teamSize` and `teamConcurrency`.

Why these configurations:

- Defaults: `work()` with no options, which its docs sum up as "1 job every 2 seconds": one
  job per fetch, one fetching worker per queue, a 2 s poll, LISTEN/NOTIFY off. A drain of
  thousands of jobs would take hours, so that configuration drains a few jobs only (the rate is
  the poll's), and the wake and flatness figures use the configurations below instead.
- Wake: one process with `useListenNotify` and `batchSize: 10`. At batch 1 a worker woken once
  for two jobs fetches one, and the other waits for the 30 s poll that backs NOTIFY up (seen on
  a loaded machine, where one job takes longer than the 20 ms between wake jobs).
- Tuned: pg-boss documents no single best preset; its worker options are `batchSize` (jobs per
  fetch, completed in one statement), `localConcurrency` (fetching workers per process),
  `pollingIntervalSeconds` (at least 0.5), `burstWhenBatchFull` (fetch again at once while
  fetches come back full) and the instance's `useListenNotify` (woken by NOTIFY when a job lands
  on a queue created with `notify: true`). Every tuned configuration sets the last three to
  their fastest; the sweep varies batch size, fetching workers and processes.

Both queues are created with `notify: true` (the install), so every enqueue pays for the NOTIFY
as pg-pipeline's, PgQueuer's and graphile-worker's do; workers at the defaults do not listen.
Completed jobs stay in the job table (deleted after 7 days by default), so flatness applies.
"""

from __future__ import annotations

from pathlib import Path

import psycopg

from benchmarks.compare.node_side import NodeSide
from benchmarks.compare.sides import WorkerConfig

FAST = ("--listen", "--burst", "--polling", "0.5")


def tuned(procs: int, batch: int, workers: int) -> WorkerConfig:
    args = (*FAST, "--batch-size", str(batch), "--local-concurrency", str(workers))
    return WorkerConfig(f"{procs} proc, batch {batch}, localConcurrency {workers}", procs, args)


class PgBossSide(NodeSide):
    script = "pg_boss.mjs"
    module = script

    def __init__(self, node: Path, scratch: Path, drain_jobs: int, polled_jobs: int) -> None:
        super().__init__(
            name="pg-boss",
            prefix="pgb",
            remaining_sql=(
                "SELECT count(*) FROM pgboss.job"
                " WHERE name = 'noop' AND state IN ('created', 'retry', 'active')"
            ),
            succeeded_sql=(
                "SELECT count(*) FROM pgboss.job WHERE name = 'noop' AND state = 'completed'"
            ),
            drain_jobs=drain_jobs,
            scratch=scratch,
            notes=[
                "pg-boss: one `PgBoss` instance per Node.js process (pool, maintenance and "
                "supervision as shipped) with `work()` on the queue; defaults are one job per "
                "2 s poll, so that drain has "
                f"{polled_jobs} jobs; tuned configs set useListenNotify, burstWhenBatchFull and "
                "pollingIntervalSeconds 0.5 and sweep batchSize and localConcurrency. Queues "
                "are created with `notify: true`. Wake: one process with useListenNotify and "
                "batchSize 10. Flatness: 1 proc, batch 100, localConcurrency 4. Enqueues: "
                "`send` one by one, `insert` in bulk.",
            ],
        )
        self.node = node
        self.polled_jobs = polled_jobs

    def configs(self, quick: bool) -> list[WorkerConfig]:
        defaults = WorkerConfig(
            f"1 proc, defaults (1 job per 2 s poll; {self.polled_jobs} jobs)",
            1,
            default=True,
            jobs=self.polled_jobs,
        )
        if quick:
            return [defaults, tuned(2, 100, 4)]
        return [defaults, tuned(1, 100, 4), tuned(2, 100, 4), tuned(2, 500, 2), tuned(2, 50, 8)]

    def wake_config(self, quick: bool) -> WorkerConfig:
        return WorkerConfig(
            "1 proc, useListenNotify, batch 10", 1, ("--listen", "--batch-size", "10")
        )

    def flat_config(self, quick: bool) -> WorkerConfig:
        return tuned(1, 100, 4)

    def fill_finished(self, url: str, n: int) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO pgboss.job (name, data, state, policy, started_on, completed_on)"
                " SELECT 'noop', jsonb_build_object('i', g), 'completed', 'standard', now(), now()"
                " FROM generate_series(1, %s) AS g",
                (n,),
            )
            conn.execute("VACUUM ANALYZE pgboss.job_common")
