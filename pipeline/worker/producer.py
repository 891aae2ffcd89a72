"""The claim loop: claims as many jobs as there are free slots, hands them to the executor, and
sleeps until a slot frees, a job is announced, a settlement may have freed a tenant's slot, or
the poll is up."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import psycopg

from pg_pipeline.db import outage
from pg_pipeline.reconnecting import Backoff
from pg_pipeline.settings import WorkerSettings
from pg_pipeline.stage import StageSpec
from pg_pipeline.store import ClaimedJob, JobStore
from pg_pipeline.worker.completer import Settled
from pg_pipeline.worker.inflight import InFlightTable
from pg_pipeline.worker.prefetch import Prefetch

log = logging.getLogger(__name__)

#: the first wait after a claim failed for an outage; it doubles up to ClaimPlan.retry_max_s
FIRST_RETRY_S = 0.1
#: how long announcements are put off after the first claim one woke for nothing; it doubles
#: with each such claim in a row, up to the poll interval (see Producer._muted)
FIRST_DEAF_S = 0.01
#: how late after a rate limit's window moves a blocked worker claims again: the database's
#: clock and ours differ by a little
LIMIT_WAKE_LATE_S = 0.02


@dataclass(frozen=True)
class ClaimPlan:
    """What the producer claims, and how often it looks."""

    worker_id: uuid.UUID
    types: tuple[str, ...]
    caps: Mapping[str, int | None]  #: per stage, each tenant's running jobs; None: uncapped
    batch_max: int  #: the most jobs one claim statement takes
    poll_interval_s: float  #: the longest nap: the backstop for a missed announcement
    retry_max_s: float  #: the longest wait between claims while the database is down
    #: completions waiting to be confirmed (see InFlightTable.settling) at which claiming stops
    #: until they are: jobs claimed beyond that would only queue behind them
    settling_max: int = 1000
    #: seconds claiming stays held back by unconfirmed completions before the worker warns: a
    #: drain of fast jobs holds back for moments, over and over, as its runners outpace one
    #: acknowledgement statement (a warning each time was 131 lines in a 20-second benchmark);
    #: a lock or a slow database holds it back for longer
    held_back_warn_s: float = 5.0
    #: the rate limits the stages declare: a short claim asks when their windows let more in
    limit_names: tuple[str, ...] = ()
    #: the stages that declare limits: a settlement of one of their jobs may give room back
    #: (its charge corrected to what the run used)
    limited: frozenset[str] = frozenset()

    @classmethod
    def for_worker(
        cls, worker_id: uuid.UUID, specs: Mapping[str, StageSpec], settings: WorkerSettings
    ) -> ClaimPlan:
        """A stage's own tenant cap wins over the worker's."""
        return cls(
            worker_id,
            tuple(sorted(specs)),
            {
                name: spec.tenant_cap if spec.tenant_cap is not None else settings.tenant_cap
                for name, spec in specs.items()
            },
            settings.claim_batch_max,
            settings.poll_interval_s,
            settings.db_retry_max_s,
            # two full acknowledgement batches: one being written, one waiting for it
            settling_max=2 * settings.ack_batch_max,
            limit_names=tuple(
                sorted({limit.name for spec in specs.values() for limit in spec.limits})
            ),
            limited=frozenset(name for name, spec in specs.items() if spec.limits),
        )


class Dispatcher(Protocol):
    def dispatch_all(self, jobs: list[ClaimedJob]) -> None:
        """Take the claimed jobs on (pipeline/worker/job_executor.py's JobExecutor)."""


class ClaimMetrics(Protocol):
    def claimed(self, count: int, seconds: float) -> None:
        """One claim statement took `count` jobs (0 too) in `seconds`."""


class Producer:
    """Claims for the free slots of `table` (and `prefetch`'s jobs ahead) and hands each job
    to `executor`. The table's `changed` event is its alarm clock: a freed slot sets it, and so
    do announced(), settled() after a short claim, and stop()."""

    def __init__(
        self,
        store: JobStore,
        plan: ClaimPlan,
        table: InFlightTable,
        executor: Dispatcher,
        prefetch: Prefetch,
        metrics: ClaimMetrics | None = None,
    ) -> None:
        self.store = store
        self.plan = plan
        self.table = table
        self.executor = executor
        self.prefetch = prefetch
        self.metrics = metrics
        self._stopping = threading.Event()
        #: The last claim got fewer jobs than it asked for: more may become claimable when a
        #: completion commits (a tenant's slot frees), not only when a local slot frees.
        self.short = False
        #: The stages whose announcements were heeded since the last claim began.
        self._heard: set[str] = set()
        #: By stage, monotonic: its announcements are put off until this (see announced()).
        #: Per stage: jobs a rate limit or a tenant's cap holds back are announced and not
        #: claimed, which must not mute the announcements of the worker's other stages.
        self.deaf_until: dict[str, float] = {}
        #: The stages announced while muted: heeded when their mute ends (see _nap()).
        self._put_off: set[str] = set()
        #: By stage, how long the last claim its announcement woke for nothing made it deaf:
        #: doubled by each such claim in a row, back to nothing once a woken claim finds its work.
        self.deaf_s: dict[str, float] = {}
        #: Claiming is paused until the completions already made are confirmed.
        self.held_back = False
        #: Monotonic: when claiming was last held back; None once the hold-back was warned of.
        self._held_since: float | None = None
        #: Monotonic: the last claim found nothing, and until this (its nap's end) only news
        #: of work starts another (see _dry()).
        self.dry_until = 0.0
        #: Something other than a freed slot woke the loop since the last claim began: a
        #: settlement that may have freed a tenant's slot or a limit's room, the listener's
        #: reconnect, the end of a hold-back.
        self._news = False
        #: Set once the first claim statement has returned or failed (or run() ended without
        #: one): the worker's maintenance waits for it before its first round, which would
        #: otherwise compete with the first claim for the CPU, the interpreter and the pool.
        self.first_claim = threading.Event()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def run(self) -> None:
        """Claim until stop()."""
        try:
            self._claim_until_stopped()
        finally:
            self.first_claim.set()  # stopped before a claim: nothing is left to wait for

    def _claim_until_stopped(self) -> None:
        plan, wake = self.plan, self.table.changed
        backoff = Backoff(plan.retry_max_s, first_s=FIRST_RETRY_S)
        while not self._stopping.is_set():
            wake.clear()
            nap = plan.poll_interval_s
            ahead = self.prefetch.extra()
            free = self.table.free(ahead)
            want = min(free, plan.batch_max)
            if ahead and self.table.waiting() > ahead // 2:
                # The runners have work in hand: claim once half of it is taken, in one trip,
                # rather than one job per finished one, a trip each.
                want = 0
            if want > 0 and self._backed_up():
                want = 0
            if want > 0 and self._dry():
                want, nap = 0, self.dry_until - time.monotonic()
            if want > 0:
                started = time.monotonic()
                heard, self._heard = self._heard, set()
                self._news = False
                try:
                    jobs = self.store.claim(plan.types, want, plan.worker_id, plan.caps)
                except psycopg.Error as exc:
                    if not outage(exc):
                        raise
                    self.first_claim.set()
                    delay = backoff.next()
                    log.warning(
                        "claim failed, database unavailable (%s); retrying in %.1f s", exc, delay
                    )
                    self._stopping.wait(delay)
                    continue
                backoff.reset()
                if not self.first_claim.is_set():  # a lock and a notify each time otherwise
                    self.first_claim.set()
                self.short = len(jobs) < want
                if jobs:
                    # Work found ends a dry spell here, before a full batch's `continue`: kept,
                    # the spell of an earlier claim that found nothing (a race lost to another
                    # worker) stopped this worker's claims until its poll, a second, while its
                    # runners went idle (docs/measurements.md, 2026-12-04 (au)).
                    self.dry_until = 0.0
                if self.metrics is not None:
                    self.metrics.claimed(len(jobs), time.monotonic() - started)
                found = {job.type for job in jobs}
                if found:
                    self._answered(found)
                if heard and self._muted(heard - found, jobs):
                    wake.clear()
                    if self._heard:  # another stage announced meanwhile: claim for it
                        wake.set()
                    if self._stopping.is_set():
                        continue
                self.executor.dispatch_all(jobs)
                if len(jobs) == want and want < free:
                    continue  # a full batch and slots left: more may be ready right now
                if not jobs and plan.limit_names:
                    # Only an empty claim asks: after a short one, the jobs it took wake the
                    # next claim as they settle, and a drain asks nothing.
                    nap = self._until_limits_allow(nap)
                if not jobs:
                    self.dry_until = time.monotonic() + nap
            self._nap(nap)

    def _dry(self) -> bool:
        """Whether the last claim found nothing and nothing since says there is work: then a
        freed slot does not start a claim, which would only find nothing again. At the end of
        a drain each of N workers' runners free their slots one after another: every worker
        claimed again for them, a claim that found nothing each time, N workers times a few,
        and on a busy server each such claim walks the queue's head over the index entries of
        every job just taken (their rows are not yet dead to every snapshot): 2.5-4 ms of
        Postgres CPU a claim against 0.4 (docs: benchmarks/FLEET.md). An announcement, a
        settlement that may free a tenant's slot, the listener's reconnect or the poll ends it."""
        if self.dry_until == 0.0 or self._heard or self._news:
            return False
        if time.monotonic() >= self.dry_until:
            self.dry_until = 0.0
            return False
        return True

    def _nap(self, nap: float) -> None:
        """Sleep until woken or for `nap`, and until the end of a mute that put announcements
        off: the next claim heeds them. A worker that lost a race for a job, and was muted for
        it, still claims the next job announced meanwhile, a few milliseconds late, where
        dropping the announcement left that job to the poll (a second) whenever every worker
        had lost its last race."""
        wake = self.table.changed
        deadline = time.monotonic() + nap
        while True:
            now = time.monotonic()
            ends = [t for t in list(self.deaf_until.values()) if now < t < deadline]
            if wake.wait(max(0.0, min(ends, default=deadline) - now)):
                return
            now = time.monotonic()
            due = {s for s in list(self._put_off) if self.deaf_until.get(s, 0.0) <= now}
            if due:
                self._put_off -= due
                self._heard |= due
                return
            if now >= deadline:
                return

    def _answered(self, found: set[str]) -> None:
        """A claim took jobs of the stages `found`, whatever woke it: their announcements that
        arrived while it ran, or were put off, are most likely of those jobs (a claim that a
        settlement or a poll started took the job whose announcement came meanwhile), so none
        wakes a claim that would count as woken for nothing; and a run of such claims is over,
        so the next mute is short again. Jobs enqueued after the claim are still found: this
        worker claims again as the jobs it took settle, and the others heard them too."""
        self._heard -= found
        self._put_off -= found
        for stage in found:
            self.deaf_s.pop(stage, None)

    def _muted(self, unfound: set[str], jobs: list[ClaimedJob]) -> bool:
        """After a claim announcements woke: those of the stages `unfound` (another worker took
        the job, a limit or a cap holds it back, or the announcement was forged) are put off
        for a while, twice as long after each such claim in a row up to the poll interval: a
        flood of forged ones soon costs one claim per interval and stage, while a worker that
        lost one race claims the next job announced a few milliseconds later (see _nap()). A
        settlement, a freed slot or a stop still wakes it meanwhile. True when the claim found
        nothing: the wake-up is spent."""
        now = time.monotonic()
        for stage in unfound:
            deaf = min(self.plan.poll_interval_s, max(FIRST_DEAF_S, 2 * self.deaf_s.get(stage, 0)))
            self.deaf_s[stage] = deaf
            self.deaf_until[stage] = now + deaf
        self._heard -= unfound
        return not jobs

    def _until_limits_allow(self, nap: float) -> float:
        """How long to sleep after an empty claim when the stages have rate limits: until a
        window next lets more in, if sooner than `nap` (docs/limits.md). Jobs a limit holds
        back are ready, so no announcement comes when the window opens: the poll would find
        them late, and claiming in a loop would be a storm of empty claims."""
        try:
            wait = self.store.limit_wait(self.plan.limit_names)
        except psycopg.Error as exc:
            if not outage(exc):
                raise
            return nap
        # A moment past the second the window moves at, so that the claim sees it moved.
        return nap if wait is None else min(nap, wait + LIMIT_WAKE_LATE_S)

    def _backed_up(self) -> bool:
        """Whether completions wait for their acknowledgement in such numbers (a lock, a slow
        or read-only database) that claiming must stop until they are confirmed: a job claimed
        now would only wait behind them, and its lease with theirs."""
        settling = self.table.settling()
        backed_up = settling >= self.plan.settling_max
        now = time.monotonic()
        if backed_up != self.held_back:
            self.held_back = backed_up
            if backed_up:
                self._held_since = now
                log.debug("%d completions wait to be confirmed: claiming paused", settling)
            elif self._held_since is None:
                log.info("completions confirmed: claiming again")
            else:
                log.debug("completions confirmed: claiming again")
        if (
            backed_up
            and self._held_since is not None
            and now - self._held_since >= self.plan.held_back_warn_s
        ):
            log.warning(
                "%d completions have waited %.0f s to be confirmed: claiming no more until they"
                " are",
                settling,
                now - self._held_since,
            )
            self._held_since = None  # warned: the end of the hold-back is said at INFO
        return backed_up

    def announced(self, job_type: str) -> None:
        """A job of this type became ready (a notification); "" from the listener itself, which
        (re)connected and may have missed some: claim now.

        Anyone who can connect may send a notification, so after a claim that one woke finds
        nothing, the stage's next ones are put off for a while (see _muted()), and heeded
        together when it ends: a flood of them costs a few claims (one per doubling of
        FIRST_DEAF_S up to the poll interval), then at most one claim per poll interval beyond
        the polls."""
        if not job_type:
            self._news = True
            self.table.changed.set()
        elif job_type in self.plan.types:
            if time.monotonic() >= self.deaf_until.get(job_type, 0):
                self._heard.add(job_type)
                self.table.changed.set()
            else:
                self._put_off.add(job_type)

    def settled(self, job: ClaimedJob, settled: Settled) -> None:
        """A completer subscriber: a claim that came back short may succeed now if the
        settlement freed a tenant's slot under its cap or gave a limit room back, and one held
        back by unconfirmed completions may go ahead. Any other settlement makes nothing
        claimable that the claim did not find, and starts no claim: at the end of a drain each
        acknowledgement batch of each worker did, a claim that found nothing."""
        if self.held_back or (self.short and self._may_free(job)):
            self._news = True
            self.table.changed.set()

    def settled_all(self, jobs: list[ClaimedJob], settled: Settled) -> None:
        """settled() for a batch: one wake-up is enough."""
        self.settled(next((j for j in jobs if self._may_free(j)), jobs[0]), settled)

    def _may_free(self, job: ClaimedJob) -> bool:
        return job.tenant_id is not None or job.type in self.plan.limited

    def stop(self) -> None:
        """Claim no more; run() returns within a moment."""
        self._stopping.set()
        self.table.changed.set()
