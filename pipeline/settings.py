"""Worker settings, each with its unit and default where it is defined."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: Dead rows in the hot table from which a worker vacuums it (hot_vacuum_dead_rows below;
#: pipeline/maintenance/hot_vacuum.py). A vacuum of the table kept small took 12-18 ms at
#: 50,000-100,000 dead rows beside 20,000 live (0.07-0.1 s at 500,000), against 1-2.6 s for the
#: 3-6 M that a minute of draining leaves; fed drains with thresholds of 30,000, 100,000 and
#: 300,000 ran alike (31.6, 31.0-31.2 and 32.1 k jobs/s, 18-19 us of Postgres CPU a job, against
#: 15-22 k and 38-43 us without: see docs/measurements.md, 2026-12-04 (ag)).
HOT_VACUUM_DEAD_ROWS = 100_000


class WorkerSettings(BaseModel):
    """Unknown keys are rejected, so a misspelt setting fails loudly instead of being ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: jobs run at once by one worker process (threads)
    concurrency: int = Field(default=8, ge=1, le=1024)
    #: seconds between claims when idle; the backstop for a missed notification
    poll_interval_s: float = Field(default=1.0, gt=0)
    #: seconds in-flight jobs get to finish after SIGTERM before they are released
    grace_period_s: float = Field(default=30.0, ge=0)
    #: seconds between reclaim passes over expired leases
    reclaim_interval_s: float = Field(default=30.0, gt=0)
    #: jobs claimed ahead of a free runner thread, so runners never wait on a claim's round
    #: trip; None: while every stage this worker ran lately took under 10 ms a job, about 10 ms
    #: of work per runner (at least `concurrency`, at most twice `claim_batch_max`), else none, so a
    #: slow job is never parked behind another. 0: never.
    prefetch: int | None = Field(default=None, ge=0, le=4096)
    #: the most jobs one claim statement takes: a claim costs Postgres about 0.3 ms of CPU
    #: whatever it takes, and each tenant in it some 26 us more (a skip probe, a pick, a pass
    #: row), so a drain of fast jobs spends less a job in fuller claims (8.3 us a job in claims
    #: of 100, 6.5 in claims of 200: docs/measurements.md, 2026-12-03 (m); 400: (y)). Only a
    #: worker whose stages take well under a millisecond a job fills them: it claims ahead about
    #: 10 ms of work a runner (pipeline/worker/prefetch.py), and a slower one asks for less.
    claim_batch_max: int = Field(default=400, ge=1)
    #: the most acknowledgements written by one statement: one costs Postgres about 0.5 ms of
    #: CPU whatever it writes, and each tenant in it a minute row and usage rows; with claims of
    #: 400 a drain's batches reached 435 jobs on average under a bound of 500, 658 under 1000
    ack_batch_max: int = Field(default=1000, ge=1)
    #: seconds after its last heartbeat that a silent worker's row is deleted
    worker_prune_after_s: float = Field(default=600.0, gt=0)
    #: seconds a finished run (its jobs, outputs and joins) is kept once all of it has finished,
    #: before this worker's pruner deletes it; None: kept for good (`--retention`, e.g. 7d)
    retention_s: float | None = Field(default=None, gt=0)
    #: seconds a blob that no remaining run references is kept, after it was last stored or
    #: put again, before retention deletes it from the blob store (see
    #: pipeline/maintenance/blob_sweep.py): longer than a job takes to be enqueued after its
    #: blob is put
    blob_grace_s: float = Field(default=3600.0, ge=0)
    #: longest wait between reconnect attempts while the database is down, seconds
    db_retry_max_s: float = Field(default=5.0, gt=0)
    #: stage threads stuck past their timeout or cancel (each replaced by a fresh thread) that
    #: a worker tolerates; past that it stops with exit code 1 so a supervisor restarts it
    max_stuck_threads: int = Field(default=16, ge=0)
    #: per-tenant cap on running jobs for the stages this worker runs that declare none; None:
    #: uncapped. Caps set with `pipeline tenants set-cap` win over both.
    tenant_cap: int | None = Field(default=None, ge=0)
    #: dead rows in the hot table (pipeline.active_jobs) from which this worker vacuums it
    #: itself, or as many as it has live rows if that is more, rather than leave it to
    #: autovacuum, which comes by once a minute at most (pipeline/maintenance/hot_vacuum.py);
    #: None: never (`--hot-vacuum-dead-rows off`)
    hot_vacuum_dead_rows: int | None = Field(default=HOT_VACUUM_DEAD_ROWS, ge=1)
    #: seconds between recounts of the tenant slot counters (drift is logged and corrected)
    slot_repair_interval_s: float = Field(default=300.0, gt=0)
    #: seconds between scheduler ticks (each fires whatever recurring schedules are due)
    schedule_interval_s: float = Field(default=1.0, gt=0)
    #: LISTEN for wake-ups; turn off behind PgBouncer in transaction mode (polling remains)
    listen: bool = True
    #: TCP port of the worker's Prometheus endpoint (/metrics); None: no endpoint. 0 picks a
    #: free port. See pipeline/worker/metrics.py for the metric names.
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    #: address the endpoint binds: loopback unless told otherwise, for its gauges name every
    #: stage and tenant; "0.0.0.0" (or "::") serves every interface, e.g. in a container
    metrics_host: str = Field(default="127.0.0.1", min_length=1)
