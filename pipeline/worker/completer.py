"""Applies transitions: the only code that writes a claimed job's end, the owner of every
database error that writing can meet, and the one that tells the others a claim is settled.

The rules: an outage (pg_pipeline.db.outage: a lost connection, a server shutting down or read-only)
is retried until the claim's lease runs out (then reclaim takes over, which is always safe).
Any refusal (a NUL or an out-of-range number in a follow-up, a dedup key too long for its index,
a constraint an on_complete step broke, an exception from such a step) rolls the completing
transaction back and fails the job for good with the reason; the worker goes on. Plain
completions are buffered and written in batches, still fenced job by job.

A batch never waits on one job: a row another transaction holds locked (an operator's open
transaction) is skipped, and any other lock (a fan-out's join row) is waited for at most a second.
Jobs left so are handed to a thread of their own that waits for their rows (run_locked), so the
batches behind them go on, and each stays held, and heartbeated, until its write is confirmed.

When a claim's settling is over (confirmed, lost, or left to reclaim) the completer publishes
it: to the log, to the metrics, and to each subscriber (the in-flight table stops holding the
claim; the producer claims again if its last claim came back short).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any, NamedTuple, Protocol, cast, runtime_checkable

import psycopg
import psycopg.errors
from psycopg.types.json import Jsonb

from pg_pipeline import attempt_logs
from pg_pipeline.attempt_logs import AttemptLog
from pg_pipeline.db import outage
from pg_pipeline.errors import LeaseLost
from pg_pipeline.executor import describe_error
from pg_pipeline.logs import log_settlement, log_settlements
from pg_pipeline.outcomes import (
    PLAIN_COMPLETE,
    Complete,
    Discard,
    Fail,
    GiveBack,
    Retry,
    TransactionStep,
    Transition,
    Wait,
    clean_error,
)
from pg_pipeline.queries import Q
from pg_pipeline.reconnecting import Backoff, retry_db
from pg_pipeline.store import ClaimedJob, JobStore
from pg_pipeline.usage import Usage
from pg_pipeline.wording import counted

log = logging.getLogger(__name__)


class Settled(StrEnum):
    """What the database confirmed for a claim: the job's new state, or why there is none.
    A str, so it is also the `result` a metric counts and the word a log line says."""

    DONE = "done"
    QUEUED = "queued"  #: back in the queue to be retried
    FAILED = "failed"
    WAITING = "waiting"  #: waits for a signal or its deadline (pg_pipeline.waits)
    LOST = "lost"  #: the fence did not hold: cancelled, retried or reclaimed since
    BATCHED = "batched"  #: a plain completion, written with the next acknowledgement batch
    #: the database stayed unreachable until the lease ran out; reclaim will decide
    UNKNOWN = "unknown"


class Subscriber(Protocol):
    def settled(self, job: ClaimedJob, settled: Settled) -> None:
        """This claim's settling is over (never called with BATCHED)."""


@runtime_checkable
class BatchSubscriber(Subscriber, Protocol):
    def settled_all(self, jobs: list[ClaimedJob], settled: Settled) -> None:
        """settled() for each of `jobs`, told at once (an acknowledgement batch's)."""


class CompleterMetrics(Protocol):
    def settled(self, stage: str, result: str) -> None: ...

    def acknowledged(self, count: int, seconds: float) -> None:
        """One acknowledgement batch confirmed `count` completions in `seconds`."""


#: seconds an acknowledgement batch waits for a lock it cannot skip (a fan-out's join row)
#: before its jobs are handed to the thread that waits for locked rows
ACK_LOCK_WAIT_S = 1.0
#: seconds one wait of the thread for locked rows lasts: between two, it sees a stop and
#: writes what was freed without the others
LOCKED_ROW_WAIT_S = 1.0


class _MetLock(Exception):
    """A write waited ACK_LOCK_WAIT_S for a lock it could not skip."""


class _Refused(Exception):
    """The database (or a completion step) refused the write for a reason retrying won't fix."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Ack(NamedTuple):
    """A plain completion waiting for its batch (a named tuple: one is made per job)."""

    job: ClaimedJob
    until: float
    log: AttemptLog | None = None  #: what the attempt's row takes from this worker


#: the attempt's outcome (pipeline.job_attempts) when a retry or failure has this cause
_CAUSE_OUTCOMES = {"timed out": "timed_out", "crashed": "crashed"}


def _logs(acks: list[_Ack]) -> dict[int, AttemptLog | None]:
    return {a.job.id: a.log for a in acks}


class Completer:
    def __init__(
        self,
        store: JobStore,
        *,
        halt: threading.Event,
        retry_max_s: float,
        batch_max: int,
        metrics: CompleterMetrics | None = None,
        acks: JobStore | None = None,
    ) -> None:
        """`acks`: where the acknowledger thread writes its batches (`store` when None)."""
        self.store = store
        self.acks = acks or store
        self._halt = halt
        self._retry_max_s = retry_max_s
        self._batch_max = batch_max
        self._metrics = metrics
        self._subscribers: tuple[Subscriber, ...] = ()
        self._batch_subscribers: tuple[bool, ...] = ()  #: which of them are BatchSubscribers
        self._acks: queue.SimpleQueue[_Ack | None] = queue.SimpleQueue()
        #: plain completions whose rows were locked elsewhere, for run_locked(); None once
        #: the acknowledger, the only one to hand any over, has ended
        self._locked: queue.SimpleQueue[_Ack | None] = queue.SimpleQueue()
        self._said_locked: set[int] = set()  #: the jobs run_locked last logged as waiting

    def subscribe(self, subscriber: Subscriber) -> None:
        """From now on, tell `subscriber` of every settled claim (call before the work starts)."""
        self._subscribers = (*self._subscribers, subscriber)
        # Asked once here, not per batch: isinstance against a Protocol walks its members.
        self._batch_subscribers = tuple(isinstance(s, BatchSubscriber) for s in self._subscribers)

    # -- one job ------------------------------------------------------------------------------

    def apply(
        self, job: ClaimedJob, transition: Transition, *, until: float, usage: Usage | None = None
    ) -> Settled:
        """Write the transition, fenced; `until` (monotonic) bounds retries on outages. The
        attempt's log lines so far and its `usage` go with it (taken now: the run is over, or
        stuck)."""
        log_ = attempt_logs.snapshot(job.fence, usage)
        if transition is PLAIN_COMPLETE or (isinstance(transition, Complete) and transition.plain):
            self._acks.put(_Ack(job, until, log_))
            return Settled.BATCHED
        written = transition
        try:
            settled = self._write(job, transition, until, log_)
        except _Refused as refused:  # the settlement's line says why (cause "refused")
            settled, written = self._fail_refused(job, transition, refused.reason, until, log_)
        self.publish(job, settled, written)
        return settled

    def _write(
        self, job: ClaimedJob, transition: Transition, until: float, log_: AttemptLog | None
    ) -> Settled:
        if isinstance(transition, Discard):
            return Settled.LOST
        if isinstance(transition, Wait):
            ok = self._guarded(
                f"wait job {job.id}",
                lambda: self.store.wait(job, transition.request, log_),
                until,
            )
            return Settled.UNKNOWN if ok is None else (Settled.WAITING if ok else Settled.LOST)
        if isinstance(transition, Complete):
            written = self._guarded(
                f"complete job {job.id}", lambda: self._complete_with(job, transition, log_), until
            )
            return Settled.UNKNOWN if written is None else written
        outcome = _CAUSE_OUTCOMES.get(transition.cause)
        if isinstance(transition, Retry | GiveBack):
            refund = isinstance(transition, GiveBack)
            ok = self._guarded(
                f"{'give back' if refund else 'retry'} job {job.id}",
                lambda: self.store.retry_later(
                    job,
                    transition.error,
                    transition.delay_s,
                    refund=refund,
                    outcome=outcome,
                    log=log_,
                ),
                until,
            )
            return Settled.UNKNOWN if ok is None else (Settled.QUEUED if ok else Settled.LOST)
        ok = self._guarded(
            f"fail job {job.id}",
            lambda: self.store.fail(job, transition.error, outcome=outcome or "failed", log=log_),
            until,
        )
        return Settled.UNKNOWN if ok is None else (Settled.FAILED if ok else Settled.LOST)

    def _fail_refused(
        self,
        job: ClaimedJob,
        transition: Transition,
        reason: str,
        until: float,
        log_: AttemptLog | None = None,
    ) -> tuple[Settled, Transition]:
        """The first write was refused: fail the job with the reason, and if even that is
        refused (the reason itself cannot be stored), with a reason that surely can. Returns
        what was written."""
        error = clean_error(reason)
        attempts: list[Transition] = [Fail(error, "refused")]
        if isinstance(transition, Retry | Fail):
            fields = {**transition.__dict__, "error": error, "cause": "refused"}
            attempts = [type(transition)(**fields)]
        attempts.append(Fail("the job's result and its error could not be stored", "refused"))
        for fallback in attempts:
            try:
                return self._write(job, fallback, until, log_), fallback
            except _Refused as again:
                log.error("job %s (%s): fallback write refused: %s", job.id, job.type, again)
        return Settled.UNKNOWN, transition

    def _complete_with(
        self, job: ClaimedJob, transition: Complete, log_: AttemptLog | None
    ) -> Settled:
        steps: list[TransactionStep] = []
        if transition.output is not None:
            steps.append(_save_output(job, transition))
        steps.extend(transition.steps)
        try:
            self.store.complete_with(job, [_step_guard(step) for step in steps], log_)
        except LeaseLost:
            return Settled.LOST
        return Settled.DONE

    def _guarded(self, what: str, call: Callable[[], Any], until: float) -> Any:
        """retry_db, with every refusal (an error retrying would not cure) turned into _Refused."""
        try:
            return retry_db(what, call, halt=self._halt, max_delay_s=self._retry_max_s, until=until)
        except _Refused:
            raise
        except psycopg.Error as exc:  # retry_db lets only refusals through
            raise _Refused(f"the database refused the write: {_db_reason(exc)}") from exc

    def publish(
        self,
        job: ClaimedJob,
        settled: Settled,
        transition: Transition | None = None,
        *,
        logged: bool = False,
    ) -> None:
        """This claim's settling is over: say so to the log, the metrics and the subscribers.
        The completer calls it for what it writes, with the transition when it knows it; the
        worker, for what a child process wrote (`logged`: the child logged its own line)."""
        if not logged:
            try:
                log_settlement(job, settled, transition)
            except Exception:  # a log line must not skip the bookkeeping below
                log.exception("job %s: logging its settling failed", job.id)
        for subscriber in self._subscribers:
            try:
                subscriber.settled(job, settled)
            except Exception:  # bookkeeping must not undo a confirmed write, nor skip the rest
                log.exception("job %s: telling %r it settled failed", job.id, subscriber)
        if self._metrics is not None:
            try:
                self._metrics.settled(job.type, settled)
            except Exception:
                log.exception("job %s: counting its settling failed", job.id)

    def _publish_all(self, jobs: list[ClaimedJob], settled: Settled) -> None:
        """publish() for claims settled alike, in one go: an acknowledgement batch's hundreds
        of jobs were told one by one to the log, each subscriber and the metrics, which cost
        more than writing them."""
        if not jobs:
            return
        try:
            log_settlements(jobs, settled)
        except Exception:  # a log line must not skip the bookkeeping below
            log.exception("logging the settling of %s failed", counted(len(jobs), "job"))
        for subscriber, batched in zip(self._subscribers, self._batch_subscribers, strict=True):
            try:
                if batched:
                    cast(BatchSubscriber, subscriber).settled_all(jobs, settled)
                    continue
            except Exception:  # bookkeeping must not undo a confirmed write, nor skip the rest
                log.exception(
                    "telling %r of the settling of %s failed", subscriber, counted(len(jobs), "job")
                )
                continue
            for job in jobs:
                try:
                    subscriber.settled(job, settled)
                except Exception:
                    log.exception("job %s: telling %r it settled failed", job.id, subscriber)
        if self._metrics is not None:
            try:
                for job in jobs:
                    self._metrics.settled(job.type, settled)
            except Exception:
                log.exception("counting the settling of %s failed", counted(len(jobs), "job"))

    # -- batched acknowledgements ---------------------------------------------------------------

    def run_acks(self) -> None:
        """The acknowledger thread: until close(), write buffered completions in batches."""
        try:
            self._ack_until_closed()
        finally:
            self._locked.put(None)  # run_locked: no more jobs come

    def _ack_until_closed(self) -> None:
        finishing = False
        while not finishing:
            first = self._acks.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self._batch_max:
                try:
                    more = self._acks.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    finishing = True
                    break
                batch.append(more)
            self._ack_batch(batch)

    def _ack_batch(self, batch: list[_Ack]) -> None:
        started = time.monotonic()
        # Completions lock rows beside their own (a fan-out's join row) in the order they
        # delete the jobs: JobStore.acknowledge writes every batch in the order of its ids.
        until = min(a.until for a in batch)
        try:
            confirmed = retry_db(
                "acknowledge",
                lambda: self._acknowledge([a.job.fence for a in batch], _logs(batch)),
                halt=self._halt,
                max_delay_s=self._retry_max_s,
                until=until,
            )
        except _MetLock:
            log.warning(
                "acknowledgement of %s met a lock it could not skip; settling each apart",
                counted(len(batch), "job"),
            )
            self._hand_to_locked(batch)
            return
        except psycopg.Error as exc:
            # A plain completion has nothing the database could refuse; if one is refused all
            # the same, settle the batch one by one so only the culprit pays.
            log.error("batched acknowledgement refused (%s); settling one by one", exc)
            for ack in batch:
                self._complete_now(ack.job, ack.until, ack.log)
            return
        if confirmed is None:
            self._publish_all([ack.job for ack in batch], Settled.UNKNOWN)
            return
        if self._metrics is not None:
            self._metrics.acknowledged(len(confirmed), time.monotonic() - started)
        if len(confirmed) == len(batch):  # the common case: every job of the batch is done
            self._publish_all([ack.job for ack in batch], Settled.DONE)
            return
        missing = [a for a in batch if a.job.id not in confirmed]
        # Not confirmed: lost to another claim, or skipped because its row is locked elsewhere.
        held = self._still_held(missing, until) if missing else set()
        locked = [a for a in missing if held is None or a.job.id in held]
        self._publish_all([a.job for a in batch if a.job.id in confirmed], Settled.DONE)
        if held is not None:
            self._publish_all([a.job for a in missing if a.job.id not in held], Settled.LOST)
        self._hand_to_locked(locked)

    def _acknowledge(
        self, fences: list[tuple[int, int]], logs: dict[int, AttemptLog | None]
    ) -> set[int]:
        try:
            return self.acks.acknowledge(fences, lock_wait_s=ACK_LOCK_WAIT_S, logs=logs)
        except psycopg.errors.LockNotAvailable as exc:
            raise _MetLock from exc

    def _still_held(self, missing: list[_Ack], until: float) -> set[int] | None:
        """Which of `missing` this worker still owns; None if the database could not say."""
        try:
            return retry_db(
                "find locked rows",
                lambda: self.store.still_held([a.job.fence for a in missing]),
                halt=self._halt,
                max_delay_s=self._retry_max_s,
                until=until,
            )
        except psycopg.Error as exc:  # a refusal, of a plain read: let the lone writes find out
            log.error("could not tell lost jobs from locked ones (%s)", exc)
            return None

    def _hand_to_locked(self, acks: list[_Ack]) -> None:
        for ack in acks:
            # Often a moment's lock (the heartbeat's, a reader's): run_locked says when it lasts.
            log.debug("job %s (%s): its row is locked; settling it apart", ack.job.id, ack.job.type)
            self._locked.put(ack)

    # -- completions whose rows are locked elsewhere ----------------------------------------------

    def run_locked(self) -> None:
        """The thread for completions whose rows another transaction holds locked: until halt,
        write each the moment its lock goes. Its jobs stay held (and heartbeated) until then.
        With none, it sleeps until the acknowledger hands one over, and ends once the
        acknowledger has ended (after close()): it used to wake every half second to see a
        halt, in every worker, idle or not (benchmarks/FLEET.md).

        One statement waits for all their rows, LOCKED_ROW_WAIT_S at a time: a statement that
        waits for a row is first in that row's queue, and reclaim skips a row someone waits
        for, so when the lock goes the completion is written before reclaim could take the
        job (whose lease ran out meanwhile). Waiting for one row after another left the rest
        to reclaim for as long as the first took. Between two waits, what was freed without
        the others is written at once."""
        waiting: dict[int, _Ack] = {}
        backoff = Backoff(self._retry_max_s)
        ended = False  # the acknowledger has: nothing more is handed over
        while not self._halt.is_set():
            if not ended:
                taken, ended = self._take_locked(block=not waiting)
                for ack in taken:
                    waiting[ack.job.id] = ack
            if not waiting:
                if ended:
                    return
                continue
            try:
                settled = self._settle_waiting(list(waiting.values()))
            except psycopg.Error as exc:  # an outage: the jobs stay held; try again later
                log.warning("completing %s failed (%s)", counted(len(waiting), "locked job"), exc)
                self._halt.wait(backoff.next())
                continue
            backoff.reset()
            for job_id, result in settled.items():
                self.publish(waiting.pop(job_id).job, result)

    def _take_locked(self, *, block: bool) -> tuple[list[_Ack], bool]:
        """The jobs handed over, waiting for the first when `block`; and whether the
        acknowledger has ended (it hands over nothing after)."""
        taken: list[_Ack] = []
        try:
            ack = self._locked.get() if block else self._locked.get_nowait()
            while ack is not None:
                taken.append(ack)
                ack = self._locked.get_nowait()
        except queue.Empty:
            return taken, False
        return taken, True

    def _settle_waiting(self, waiting: list[_Ack]) -> dict[int, Settled]:
        """Complete the jobs, waiting a while for their rows: what they settled to, without the
        jobs still locked. Raises the outages; a refusal is settled job by job."""
        fences = [a.job.fence for a in waiting]
        try:
            confirmed = self.store.complete_within(fences, LOCKED_ROW_WAIT_S, _logs(waiting))
        except psycopg.errors.LockNotAvailable:
            self._say_locked(waiting)
            try:  # some row is still locked: write those freed meanwhile, without waiting
                confirmed = self.store.acknowledge(
                    fences, lock_wait_s=LOCKED_ROW_WAIT_S, logs=_logs(waiting)
                )
            except psycopg.errors.LockNotAvailable:
                # A lock no statement can skip (a fan-out's join row): one job at a
                # time, so that only the jobs behind that lock wait for it.
                return self._settle_each(waiting)
            missing = [a.job.fence for a in waiting if a.job.id not in confirmed]
            held = self.store.still_held(missing) if missing else set()
            return {
                a.job.id: Settled.DONE if a.job.id in confirmed else Settled.LOST
                for a in waiting
                if a.job.id not in held
            }
        except psycopg.Error as exc:
            if outage(exc):
                raise
            # A refusal, which only its own job must pay for.
            return self._settle_each(waiting)
        return {a.job.id: Settled.DONE if a.job.id in confirmed else Settled.LOST for a in waiting}

    def _settle_each(self, waiting: list[_Ack]) -> dict[int, Settled]:
        results = {a.job.id: self._settle_alone(a) for a in waiting}
        return {job_id: settled for job_id, settled in results.items() if settled is not None}

    def _say_locked(self, waiting: list[_Ack]) -> None:
        new = [a.job.id for a in waiting if a.job.id not in self._said_locked]
        if new:
            log.warning(
                "completion waits for a row locked by another transaction: %s (%s), held by "
                "this worker meanwhile; the others are acknowledged",
                counted(len(new), "job"),
                ", ".join(map(str, new)),
            )
        self._said_locked = {a.job.id for a in waiting}

    def _settle_alone(self, ack: _Ack) -> Settled | None:
        """Complete one job, waiting a while for its row: None while it stays locked. Raises
        the outages; a refusal fails the job, as anywhere else."""
        try:
            confirmed = self.store.complete_within([ack.job.fence], LOCKED_ROW_WAIT_S, _logs([ack]))
        except psycopg.errors.LockNotAvailable:
            return None
        except psycopg.Error as exc:
            if outage(exc):
                raise
            reason = f"the database refused the write: {_db_reason(exc)}"
            lease = time.monotonic() + ack.job.lease_seconds
            return self._fail_refused(ack.job, Complete(), reason, lease, ack.log)[0]
        return Settled.DONE if confirmed else Settled.LOST

    def apply_now(
        self, job: ClaimedJob, transition: Transition, *, until: float, usage: Usage | None = None
    ) -> Settled:
        """Like apply, but a plain completion is written at once instead of batched."""
        if isinstance(transition, Complete) and transition.plain:
            return self._complete_now(job, until, attempt_logs.snapshot(job.fence, usage))
        return self.apply(job, transition, until=until, usage=usage)

    def _complete_now(self, job: ClaimedJob, until: float, log_: AttemptLog | None) -> Settled:
        settled: Settled
        written: Transition = Complete()
        try:
            ok = self._guarded(
                f"complete job {job.id}",
                lambda: self.store.complete([job.fence], {job.id: log_}),
                until,
            )
            settled = Settled.UNKNOWN if ok is None else (Settled.DONE if ok else Settled.LOST)
        except _Refused as refused:
            settled, written = self._fail_refused(job, written, refused.reason, until, log_)
        self.publish(job, settled, written)
        return settled

    def close(self) -> None:
        """Flush: the acknowledger writes what is buffered, then returns."""
        self._acks.put(None)


def _save_output(job: ClaimedJob, transition: Complete) -> TransactionStep:
    row = {
        "root_id": job.root_id,
        "stage": job.type,
        "part": transition.part,
        "job_id": job.id,
        "attempt": job.attempts,
        "output": Jsonb(transition.output),
        "code_version": transition.code_version,
    }

    def save(conn: psycopg.Connection[Any]) -> None:
        conn.execute(Q["save_output"], row)

    return save


#: what a completion step may raise as itself: our own signals (and outages, below)
_PASS_THROUGH: tuple[type[BaseException], ...] = (LeaseLost, _Refused)


def _step_guard(step: TransactionStep) -> TransactionStep:
    """A completion step that raises (a bug in an on_complete, a refused insert, a follow-up
    too large for an index) rolls the transaction back and fails the job with the reason;
    outages stay retryable."""

    def guarded(conn: psycopg.Connection[Any]) -> None:
        try:
            step(conn)
        except _PASS_THROUGH:
            raise
        except psycopg.Error as exc:
            if outage(exc):
                raise
            raise _Refused(f"the database refused the job's completion: {_db_reason(exc)}") from exc
        except Exception as exc:
            raise _Refused(f"a completion step failed: {describe_error(exc)}") from exc

    return guarded


def _db_reason(exc: psycopg.Error) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
