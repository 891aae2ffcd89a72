"""The worker's side of the database: claim, heartbeat, settle, release, reclaim.

Every statement after a claim is fenced by (id, claims, status = 'running'); the methods
return what the database confirmed, and the caller treats anything missing as a lost lease.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from pg_pipeline.attempt_logs import AttemptLog, one_params
from pg_pipeline.attempt_logs import params as attempt_params
from pg_pipeline.db import set_lock_timeout
from pg_pipeline.errors import LeaseLost
from pg_pipeline.history import healing
from pg_pipeline.limits import Counters
from pg_pipeline.queries import Q
from pg_pipeline.recorded_stages import record_stages
from pg_pipeline.stage import StageSpec
from pg_pipeline.waits import WaitRequest, wait_params

log = logging.getLogger(__name__)

#: shutdown releases per job that refund the attempt; later ones are charged
FREE_RELEASES = 3
#: reclaims per job after its worker died that refund the attempt; later ones are charged
FREE_CRASH_RECLAIMS = 3
#: seconds a batched acknowledgement waits for a job's row locked elsewhere before it writes the
#: batch again skipping such rows: long enough for a heartbeat's lock (a statement's), short
#: beside the wait for a lock no statement can skip (the caller's lock_wait_s)
ACK_ROW_WAIT_S = 0.05
#: The type of the job a warm-up claims and acknowledges (sql/queries.sql, warm_up_job): not a
#: stage's name (no registered stage has a space in its name, and the job is never committed).
WARM_UP_TYPE = "pg-pipeline warm-up"
#: seconds a warm-up statement waits for a lock (a migration's) before the warm-up is skipped
WARM_UP_LOCK_WAIT_S = 1.0


class ClaimedJob(NamedTuple):
    """One claimed job, as pipeline.claim returned it. A named tuple: made per claimed row,
    where a frozen dataclass cost three times as much to build."""

    id: int
    type: str
    tenant_id: str | None
    payload: Any
    priority: int
    attempts: int  # charged runs, this one included: the retry budget
    max_attempts: int
    lease_seconds: int
    parent_id: int | None
    root_id: int  # the run: the root job's id, this job's own for a root
    claim: int = 1  # the claim counter: with id, the fencing token of this claim
    suspect: bool = False  # an earlier lease expired under it: run it in isolation
    traceparent: str | None = None  # the enqueuer's span, when it traced (pipeline/tracing.py)

    @property
    def fence(self) -> tuple[int, int]:
        return (self.id, self.claim)


#: The acknowledger's connections whose session holds what each batch's first write needs
#: (hold_ack_settings): a lock wait of ACK_ROW_WAIT_S, its statements planned once.
_ACK_SESSIONS: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()


def hold_ack_settings(conn: psycopg.Connection[Any]) -> None:
    """For the session of the acknowledger's connection (db.make_pool's `direct_session`: a
    connection that goes through no transaction pooler), what each batch's first write would
    otherwise set in a transaction of its own: a lock wait of ACK_ROW_WAIT_S, and its statements
    planned once. That write is then one statement in autocommit, one round trip where BEGIN,
    the settings, the statement and COMMIT took four: the worker's CPU a batch halved, about
    100 us less, and its backend's fell by 50-170 us (benchmarks/FLEET.md). What else runs on
    that connection sets its own lock wait (the skipping write, the warm-up) or lifts it
    (history.healing's partitions)."""
    set_lock_timeout(conn, ACK_ROW_WAIT_S, planned_once=True, session=True)
    _ACK_SESSIONS.add(conn)


def _fence_params(jobs: Iterable[tuple[int, int]]) -> dict[str, str]:
    """The fences as two array literals, which the queries cast: psycopg's list dumper cost
    ~0.45 us per element, a batch of acknowledgements a microsecond per job, and its element
    type followed the values' size (smallint[] for small ids), a prepared statement per type."""
    pairs = list(jobs)
    return {
        "ids": "{" + ",".join([str(int(p[0])) for p in pairs]) + "}",
        "claims": "{" + ",".join([str(int(p[1])) for p in pairs]) + "}",
    }


#: what the worker knows of the attempts it ends, by job id (pipeline/attempt_logs.py)
AttemptLogs = Mapping[int, AttemptLog | None]


def _done_params(done: Iterable[tuple[int, int]], logs: AttemptLogs | None) -> dict[str, Any]:
    """The fences of completions, and what their attempts' rows take from the worker."""
    pairs = list(done)
    return {**_fence_params(pairs), **attempt_params(logs or {}, [p[0] for p in pairs])}


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker's liveness row says about it."""

    id: uuid.UUID
    stages: list[str]
    concurrency: int
    #: stage -> the version of its input model this worker runs (StageSpec.version)
    versions: Mapping[str, str] = field(default_factory=dict)

    def params(self) -> dict[str, Any]:
        return {
            "worker_id": self.id,
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "stages": self.stages,
            "concurrency": self.concurrency,
            "versions": Jsonb(dict(self.versions)),
        }


class JobStore:
    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def claim(
        self,
        types: Sequence[str],
        limit: int,
        worker_id: uuid.UUID,
        caps: Mapping[str, int | None] | None = None,
    ) -> list[ClaimedJob]:
        """Up to `limit` ready jobs of `types`; `caps` are default per-tenant caps by stage."""
        cap_stages = sorted(caps or {})
        with self.pool.connection() as conn:
            rows = conn.execute(
                Q["claim"],
                {
                    "types": list(types),
                    "limit": limit,
                    "worker_id": worker_id,
                    "cap_stages": cap_stages,
                    "caps": [(caps or {})[stage] for stage in cap_stages],
                },
            ).fetchall()
        return list(map(ClaimedJob._make, rows))

    def heartbeat(self, worker: WorkerInfo, held: Iterable[tuple[int, int]]) -> dict[int, bool]:
        """Extend the leases still owned and (re-)register the worker. Returns the ids owned,
        each with whether its lease was extended (False: its row is locked elsewhere)."""
        # Planned afresh each beat, for the table as it is now (prepare=False). Prepared, the
        # plan kept was made while the table was empty (a worker's first beats on a quiet
        # queue, or after a vacuum found it drained), and costs a scan of the table that costs
        # nothing: one for each held job once the queue fills (sql/queries.sql, heartbeat). A
        # beat comes every few seconds: its planning costs nothing a drain would see.
        with self.pool.connection() as conn:
            rows = conn.execute(
                Q["heartbeat"], {**worker.params(), **_fence_params(held)}, prepare=False
            ).fetchall()
        return {row[0]: row[1] for row in rows}

    def complete(
        self, done: Iterable[tuple[int, int]], logs: AttemptLogs | None = None
    ) -> set[int]:
        """Mark done, waiting for rows locked elsewhere; returns the ids confirmed."""
        params = _done_params(done, logs)
        with self.pool.connection() as conn:
            rows = healing(conn, lambda: conn.execute(Q["complete"], params).fetchall())
        return {row[0] for row in rows}

    def acknowledge(
        self,
        done: Iterable[tuple[int, int]],
        lock_wait_s: float,
        logs: AttemptLogs | None = None,
    ) -> set[int]:
        """Mark a batch done, skipping job rows locked elsewhere, and waiting at most
        lock_wait_s for any other lock (a fan-out's join row): psycopg.errors.LockNotAvailable
        past that. Returns the ids confirmed; the rest are lost or locked (still_held tells).

        The batch is written first by the statement that locks its rows itself, waiting for a
        row locked elsewhere no longer than ACK_ROW_WAIT_S (a heartbeat's lock); only when that
        wait runs out is it written again skipping such rows (sql/queries.sql says why)."""
        # Sorted by id, which `acknowledge` finds each job's fence by (and locks the rows in).
        params = _done_params(sorted(done), logs)
        row_wait_s = min(ACK_ROW_WAIT_S, lock_wait_s)

        def first() -> list[tuple[Any, ...]]:
            return conn.execute(Q["acknowledge"], params).fetchall()

        def write() -> list[tuple[Any, ...]]:
            try:
                if row_wait_s == ACK_ROW_WAIT_S and conn in _ACK_SESSIONS:
                    return first()  # autocommit: its session holds the settings
                with conn.transaction():
                    set_lock_timeout(conn, row_wait_s, planned_once=True)
                    return first()
            except psycopg.errors.LockNotAvailable:
                pass
            with conn.transaction():
                set_lock_timeout(conn, lock_wait_s, planned_once=True)
                return conn.execute(Q["acknowledge_skipping"], params).fetchall()

        with self.pool.connection() as conn:
            rows = healing(conn, write)
        return {row[0] for row in rows}

    def warm_up_claim(self, worker_id: uuid.UUID) -> int:
        """Run the claim on this store's connection as a drain will, in a transaction rolled
        back: an empty claim (the heads and the group selection), then one that takes a job of
        WARM_UP_TYPE enqueued in the same transaction (the pick and the update). Returns the
        jobs that claim took (1). No other job is read for update or written."""
        with self.pool.connection() as conn, conn.transaction(force_rollback=True):
            set_lock_timeout(conn, WARM_UP_LOCK_WAIT_S)
            return len(warm_claim(conn, worker_id))

    def warm_up_acknowledge(self, worker_id: uuid.UUID) -> int:
        """Run the acknowledgement on this store's connection as a drain will, in a
        transaction rolled back: of one job of WARM_UP_TYPE, running, enqueued in the same
        transaction, so that its row's path (the move into the history, the attempt) and its
        triggers' statements run. Returns the jobs it confirmed (1)."""
        with self.pool.connection() as conn, conn.transaction(force_rollback=True):
            set_lock_timeout(conn, WARM_UP_LOCK_WAIT_S, planned_once=True)
            return len(warm_acknowledge(conn, worker_id))

    def still_held(self, claims: Iterable[tuple[int, int]]) -> set[int]:
        """The ids whose claim still owns the job, read without waiting for any lock."""
        # Unprepared, as the heartbeat (which says why): a plan kept from a time the hot table
        # was empty reads it whole for each job. It runs only when an acknowledgement missed a
        # job: its planning costs nothing a drain would see.
        with self.pool.connection() as conn:
            rows = conn.execute(Q["still_held"], _fence_params(claims), prepare=False).fetchall()
        return {row[0] for row in rows}

    def complete_within(
        self,
        done: Iterable[tuple[int, int]],
        lock_wait_s: float,
        logs: AttemptLogs | None = None,
    ) -> set[int]:
        """Mark done, waiting at most lock_wait_s for each lock (a row locked elsewhere):
        psycopg.errors.LockNotAvailable past that. Returns the ids confirmed."""
        params = _done_params(done, logs)

        def write() -> list[tuple[Any, ...]]:
            with conn.transaction():
                set_lock_timeout(conn, lock_wait_s)
                return conn.execute(Q["complete"], params).fetchall()

        with self.pool.connection() as conn:
            rows = healing(conn, write)
        return {row[0] for row in rows}

    def complete_with(
        self, job: ClaimedJob, steps: Sequence[Any], log: AttemptLog | None = None
    ) -> None:
        """Mark done and run the job's transaction steps in one transaction, fence first.
        Raises LeaseLost, rolling everything back, when the fence does not hold."""
        params = _done_params([job.fence], {job.id: log})

        def write() -> None:
            with conn.transaction():
                confirmed = conn.execute(Q["complete"], params).fetchall()
                if not confirmed:
                    raise LeaseLost(f"job {job.id} claim {job.claim}: lease lost before commit")
                for step in steps:
                    step(conn)

        with self.pool.connection() as conn:
            healing(conn, write)

    def retry_later(
        self,
        job: ClaimedJob,
        error: str,
        delay_s: float,
        *,
        refund: bool = False,
        outcome: str | None = None,
        log: AttemptLog | None = None,
    ) -> bool:
        """Back to the queue after delay_s, with refund the attempt refunded; False when the
        fence did not hold. `outcome`: the attempt's, when not retried (given_back with a
        refund): timed_out, crashed."""
        params = {
            "id": job.id,
            "claims": job.claim,
            "delay_s": delay_s,
            "error": error,
            "outcome": outcome or ("given_back" if refund else "retried"),
            **one_params(log),
        }
        with self.pool.connection() as conn:
            row = conn.execute(Q["retry_later"], {**params, "refund": refund}).fetchone()
        return row is not None

    def fail(
        self,
        job: ClaimedJob,
        error: str,
        *,
        outcome: str = "failed",
        log: AttemptLog | None = None,
    ) -> bool:
        """Failed for good; False when the fence did not hold. `outcome`: the last attempt's
        (failed, or timed_out, crashed)."""
        params = {
            "id": job.id,
            "claims": job.claim,
            "error": error,
            "outcome": outcome,
            **one_params(log),
        }
        with self.pool.connection() as conn:
            row = healing(conn, lambda: conn.execute(Q["fail"], params).fetchone())
        return row is not None

    def wait(self, job: ClaimedJob, request: WaitRequest, log: AttemptLog | None = None) -> bool:
        """To 'waiting' on `request` (sql/queries_waits.sql, wait); False when the fence did
        not hold."""
        params = {"id": job.id, "claims": job.claim, **wait_params(request), **one_params(log)}
        with self.pool.connection() as conn:
            row = conn.execute(Q["wait"], params).fetchone()
        return row is not None

    def release(self, held: Iterable[tuple[int, int]]) -> dict[int, str]:
        """Give jobs back at shutdown; returns {id: new status} for those still owned."""
        params = {**_fence_params(held), "free_releases": FREE_RELEASES}
        with self.pool.connection() as conn:
            rows = healing(conn, lambda: conn.execute(Q["release"], params).fetchall())
        return {row[0]: row[1] for row in rows}

    def unclaim(self, held: Iterable[tuple[int, int]]) -> set[int]:
        """Give back jobs that were claimed but never started, uncharged; the ids still owned."""
        with self.pool.connection() as conn:
            rows = conn.execute(Q["unclaim"], _fence_params(held)).fetchall()
        return {row[0] for row in rows}

    def cancelled(self, claims: Iterable[tuple[int, int]]) -> set[int]:
        """The ids among these (id, claim) pairs whose row is cancelled for that very claim."""
        # Unprepared, as the heartbeat (which says why): a plan kept from a time a day of the
        # history was empty reads that day whole for each hint once it fills. Hints are rare.
        with self.pool.connection() as conn:
            rows = conn.execute(
                Q["cancelled_claims"], _fence_params(claims), prepare=False
            ).fetchall()
        return {row[0] for row in rows}

    def register_worker(self, worker: WorkerInfo) -> None:
        with self.pool.connection() as conn:
            conn.execute(Q["register_worker"], worker.params())

    def record_stages(self, worker: WorkerInfo, specs: Iterable[StageSpec]) -> None:
        """Record the worker's stages (pg_pipeline.recorded_stages), for code that enqueues them
        by name or names them without importing them."""
        specs = list(specs)
        with self.pool.connection() as conn:
            record_stages(conn, specs, worker.id, socket.gethostname())
        self.record_limit_defaults(specs)

    def record_limit_defaults(self, specs: Iterable[StageSpec]) -> None:
        """The default capacities the stages' limits declare (Limit(capacity=, per=)), for
        the limits no operator has set (docs/limits.md)."""
        defaults = {
            limit.name: {"name": limit.name, "units": limit.capacity, "per": limit.per}
            for spec in specs
            for limit in spec.limits
            if limit.capacity is not None
        }
        if defaults:
            with self.pool.connection() as conn:
                params = {"defaults": Jsonb(list(defaults.values()))}
                conn.execute(Q["record_limit_defaults"], params)

    def correct_limits(self, job: ClaimedJob, actual: Mapping[str, int]) -> None:
        """Correct the job's rate-limit charges by what it really used (units by limit);
        nothing when its claim is no longer running."""
        params = {"id": job.id, "claims": job.claim, "actual": Jsonb(dict(actual))}
        with self.pool.connection() as conn:
            conn.execute(Q["limit_correct"], params)

    def correct_after_run(self, job: ClaimedJob, spec: StageSpec, counters: Counters) -> None:
        """After a run, before its job settles (the correction is fenced by its running
        claim), whatever the run's end: its charges amended by what the stage reported
        (Limit(actual=...)), by the runner thread or by the child that ran the job alone. A
        failure here leaves the estimate standing, never the job unsettled."""
        try:
            actual = {
                limit.name: units
                for limit in spec.limits
                if (units := limit.actual_units(counters)) is not None
            }
            if actual:
                self.correct_limits(job, actual)
        except Exception:
            log.exception("job %s: correcting its rate-limit charges failed", job.id)

    def limit_wait(self, names: Sequence[str]) -> float | None:
        """Seconds until a window of the limits `names` lets more in; None when none holds
        anything."""
        with self.pool.connection() as conn:
            row = conn.execute(Q["limit_wait"], {"names": list(names)}).fetchone()
        return None if row is None or row[0] is None else max(0.0, float(row[0]))

    def unregister_worker(self, worker_id: uuid.UUID) -> None:
        with self.pool.connection() as conn:
            conn.execute(Q["unregister_worker"], {"id": worker_id})

    def other_stage_version_alive(self, worker: WorkerInfo, stage: str, *, alive_s: float) -> bool:
        """Whether a worker that beat within alive_s runs a version of `stage` other than
        this worker's."""
        params = {"worker_id": worker.id, "stage": stage, "alive_s": alive_s}
        with self.pool.connection() as conn:
            row = conn.execute(
                Q["other_stage_version_alive"], {**params, "version": worker.versions.get(stage)}
            ).fetchone()
        return bool(row and row[0])


def reclaim_expired(conn: psycopg.Connection[Any], limit: int = 1000) -> list[tuple[int, str, str]]:
    """Expired leases back to queued (uncharged while refunds remain), else charged, and failed
    on the final attempt: (id, type, status)."""
    params = {"limit": limit, "free_crashes": FREE_CRASH_RECLAIMS}
    rows = healing(conn, lambda: conn.execute(Q["reclaim_expired"], params).fetchall())
    return [(row[0], row[1], row[2]) for row in rows]


def warm_claim(conn: psycopg.Connection[Any], worker_id: uuid.UUID) -> list[ClaimedJob]:
    """JobStore.warm_up_claim's statements, in the caller's transaction (which must roll back:
    the job claimed is enqueued here). A backend parses and plans a statement of the claim
    (PL/pgSQL: each statement the first time it runs, kept for the connection) and fills its
    caches on the first claims that reach it; an idle worker's polls reach the heads alone."""
    claim = {"limit": 1, "worker_id": worker_id, "cap_stages": [], "caps": []}
    conn.execute(Q["claim"], {**claim, "types": [WARM_UP_TYPE]})
    conn.execute(Q["warm_up_job"], {"type": WARM_UP_TYPE, "running": False, "worker_id": None})
    rows = conn.execute(Q["claim"], {**claim, "types": [WARM_UP_TYPE]}).fetchall()
    return list(map(ClaimedJob._make, rows))


def warm_acknowledge(conn: psycopg.Connection[Any], worker_id: uuid.UUID) -> set[int]:
    """JobStore.warm_up_acknowledge's statements, in the caller's transaction (which must roll
    back: the job acknowledged is enqueued here). Its parameters are a no-op job's, as the
    acknowledger sends them."""
    row = conn.execute(
        Q["warm_up_job"], {"type": WARM_UP_TYPE, "running": True, "worker_id": worker_id}
    ).fetchone()
    assert row is not None
    fence = (int(row[0]), int(row[1]))
    ran = AttemptLog(time.time(), None, 0, 0.0, 0.0)
    params = _done_params([fence], {fence[0]: ran})
    return {r[0] for r in conn.execute(Q["acknowledge"], params).fetchall()}
