"""What a running stage knows about its job, and how it adds work to the completing transaction."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

import psycopg
from pydantic import BaseModel, ValidationError

from pg_pipeline.blobs import blob_keys
from pg_pipeline.enqueue import JobRequest, insert_row, insert_rows, job_row
from pg_pipeline.errors import InvalidWait, LeaseLost, Waiting, WaitTimedOut
from pg_pipeline.lazy_event import LazyEvent
from pg_pipeline.outcomes import MAX_ERROR_CHARS, TransactionStep
from pg_pipeline.queries import Q
from pg_pipeline.stage import Registry
from pg_pipeline.store import ClaimedJob
from pg_pipeline.usage import Counters, Usage
from pg_pipeline.validation import InvalidJob
from pg_pipeline.waits import WaitReader, wait_request

M = TypeVar("M", bound=BaseModel)

#: (run id, stage, generation, code version) -> [(part, output as JSON)], ordered by part (None
#: for a stage without parts), of one generation: the one given, else the newest (of the code
#: version, when given)
OutputReader = Callable[[int, str, int | None, str | None], list[tuple[int | None, Any]]]


class Context:
    """Handed to every stage call. Follow-up jobs and on_complete steps are written in the same
    transaction that marks this job done, after its fence held: all of them commit, or none."""

    def __init__(
        self,
        job_id: int,
        stage: str,
        attempt: int,
        max_attempts: int,
        tenant_id: str | None,
        parent_id: int | None,
        registry: Registry,
        root_id: int | None = None,
        read_outputs: OutputReader | None = None,
        read_wait: WaitReader | None = None,
    ) -> None:
        self.job_id = job_id
        self.stage = stage
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.tenant_id = tenant_id
        self.parent_id = parent_id
        #: The run this job belongs to: the id of the job that started it.
        self.root_id = job_id if root_id is None else root_id
        self._read_outputs = read_outputs
        self._read_wait = read_wait
        #: Set when this run no longer owns the job (lease lost, cancelled, timed out, shutdown).
        #: Long stages should check it between steps; nothing they return will be written.
        self.lost_lease = LazyEvent()
        self.registry = registry
        self._steps: list[TransactionStep] = []
        self._fanned_out = False
        #: What this attempt consumed: what the stage reports (usage()) and what the worker
        #: measures of its run, written with the attempt's end.
        self.usage_record = Usage()

    @classmethod
    def for_job(
        cls,
        job: ClaimedJob,
        registry: Registry,
        read_outputs: OutputReader | None,
        read_wait: WaitReader | None = None,
    ) -> Context:
        """The context of one claimed job. Made for every job: its arguments positional, which
        cost half as much as naming them."""
        return cls(
            job.id,
            job.type,
            job.attempts,
            job.max_attempts,
            job.tenant_id,
            job.parent_id,
            registry,
            job.root_id,
            read_outputs,
            read_wait,
        )

    def check_lease(self) -> None:
        """Raise LeaseLost if this run no longer owns the job."""
        if self.lost_lease.is_set():
            raise LeaseLost(f"job {self.job_id} attempt {self.attempt} no longer owns its lease")

    def enqueue(
        self,
        type: str,
        payload: Any,
        *,
        tenant_id: str | int | None = None,
        priority: int | None = None,
        run_after: datetime | timedelta | None = None,
        dedup_key: str | None = None,
    ) -> None:
        """Add a follow-up job, inserted only if this job completes. Validated now, so a bad
        follow-up fails this job instead of surfacing later."""
        row = job_row(
            JobRequest(
                type,
                payload,
                tenant_id=self.tenant_id if tenant_id is None else tenant_id,
                priority=priority,
                run_after=run_after,
                dedup_key=dedup_key,
                parent_id=self.job_id,
                root_id=self.root_id,
            ),
            self.registry,
        )

        def insert(conn: psycopg.Connection[Any]) -> None:
            insert_row(conn, row)

        self._steps.append(insert)

    def fan_out(
        self,
        type: str,
        payloads: list[Any],
        *,
        then: tuple[str, Any] | None = None,
        priority: int | None = None,
    ) -> None:
        """Enqueue one `type` job per payload, in parallel; when the last of them finishes
        done, the database enqueues `then` (stage, payload) exactly once. If any child ends
        failed or cancelled, `then` is never enqueued and the join records the failure.
        Everything is written in this job's completing transaction. Once per job: a job has
        one join, so a second fan-out is refused at the call."""
        if self._fanned_out:
            raise InvalidJob(
                f"job {self.job_id}: fan_out may be called once per job; "
                "put every child in one call"
            )
        children = [self.registry.get(type).validate(p) for p in payloads]
        # The next stage's row, defaults filled in; the join keeps it until the last child ends.
        then_row = (
            None
            if then is None
            else job_row(
                JobRequest(
                    then[0],
                    then[1],
                    tenant_id=self.tenant_id,
                    parent_id=self.job_id,
                    root_id=self.root_id,
                ),
                self.registry,
            )
        )

        def insert(conn: psycopg.Connection[Any]) -> None:
            if not children:
                if then_row is not None:
                    insert_row(conn, then_row)
                return
            nxt = then_row or {}
            conn.execute(
                Q["insert_join"],
                {
                    "id": self.job_id,
                    "root_id": self.root_id,
                    "total": len(children),
                    "then_type": nxt.get("type"),
                    "then_payload": nxt.get("payload"),
                    "then_tenant_id": nxt.get("tenant_id"),
                    "then_priority": nxt.get("priority"),
                    "then_max_attempts": nxt.get("max_attempts"),
                    "then_lease_seconds": nxt.get("lease_seconds"),
                    "then_traceparent": nxt.get("traceparent"),
                    "then_limits": nxt.get("limits"),
                },
            )
            then_keys = [] if then_row is None else blob_keys(then_row["payload"])
            if then_keys:
                # The join enqueues the next stage later, in the run: its blobs are the run's now.
                conn.execute(Q["blob_refs_add"], self._blob_refs(then_keys))
            insert_rows(conn, child_rows)

        # Every row is built (and so validated) now: a bad child fails this job at the call.
        child_rows = [
            job_row(
                JobRequest(
                    type,
                    child,
                    tenant_id=self.tenant_id,
                    priority=priority,
                    parent_id=self.job_id,
                    root_id=self.root_id,
                    join_id=self.job_id,
                ),
                self.registry,
            )
            for child in children
        ]
        self._fanned_out = True
        self._steps.append(insert)

    def outputs(
        self, stage: str, *, generation: int | None = None, version: str | None = None
    ) -> list[tuple[int | None, Any]]:
        """The stored outputs of `stage` in this run, as (part, JSON), ordered by part, of its
        newest generation: in a rerun (pg_pipeline.rerun), the stages before the one rerun
        read their outputs as they were, the ones after it their new ones. `generation` (0:
        the run as it first ran) or `version` (the newest made by that code version) asks
        for another."""
        if self._read_outputs is None:
            raise RuntimeError("this context has no database to read outputs from")
        return self._read_outputs(self.root_id, stage, generation, version)

    def wait_for(
        self,
        name: str,
        model: type[M],
        *,
        timeout: timedelta | float,
        proposal: BaseModel | Mapping[str, Any] | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> M:
        """Wait for input named `name` (a person's review, another system's answer): the
        payload a signal delivered for it, as `model`.

        While no signal has come, this ends the run: it raises Waiting, and the job waits,
        holding no worker, lease or slot, until `pg_pipeline.signal(conn, run_id, name,
        payload)` or `timeout` (a timedelta or seconds) resumes it. The stage then runs again
        from the top, so what it does before this call must be safe to repeat, and what it
        enqueued or added with on_complete before it is dropped. On that run this returns the
        payload; past the timeout it raises WaitTimedOut, which fails the job unless the stage
        catches it. A payload `model` refuses (a validator the JSON schema could not say) does
        not fail the job: the wait opens again, the refusal in the job's last_error, for a
        better signal. `proposal` (what the stage suggests) and `detail` (anything a reviewer
        needs) are stored with the wait for whoever answers it (pg_pipeline.admin.list_waits).
        An argument it cannot take raises InvalidWait, which fails the job without retries."""
        try:
            request = wait_request(name, model, timeout, proposal, detail)
        except (TypeError, ValueError) as exc:
            raise InvalidWait(f"ctx.wait_for: {exc}") from None
        record = None if self._read_wait is None else self._read_wait(self.job_id, request.name)
        if record is not None and record.resolution == "signalled":
            try:
                return model.model_validate(record.payload)
            except ValidationError as exc:
                # The signal checked the payload against the JSON schema only; a validator of
                # the model refused it. A person's bad answer must not fail the job for good
                # (nor can a retry mend it: the answer stays): wait again, for a better one,
                # the refusal recorded as the job's last_error, naming the wait and the answer.
                answer = json.dumps(record.payload, ensure_ascii=False)
                refusal = (
                    f"AnswerRefused: the answer signalled to wait {request.name!r} of job"
                    f" {self.job_id} fits the JSON schema of {model.__name__} but not the"
                    f" model, so the wait is open again: {exc}\nThe answer: {answer}"
                )
                raise Waiting(
                    dataclasses.replace(request, refusal=refusal[:MAX_ERROR_CHARS])
                ) from None
        if record is not None and record.resolution == "timed_out":
            waited = (record.deadline - record.created_at).total_seconds()
            raise WaitTimedOut(
                f"wait {request.name!r} of job {self.job_id} timed out: no signal within"
                f" {waited:g} s (its deadline was {record.deadline:%Y-%m-%d %H:%M:%S %Z})",
                name=request.name,
                timeout_s=waited,
            )
        raise Waiting(request)

    def usage(self, **counters: int | float | str) -> None:
        """Report what this attempt consumed, kept with the attempt whatever its end (done,
        retried, failed) and summed per run, stage, tenant and day (docs/usage.md).

        A number adds up within the attempt (`ctx.usage(pages=1)` per page); a text is a label,
        the last one wins (`model="gpt-4o-mini"`). Names are identifiers; `wall_s` and `cpu_s`
        are the worker's own measures: report the CPU of child processes the stage ran as
        `child_cpu_s`, which the worker adds to cpu_s. A negative, NaN or infinite number, a
        bool, or a name that is no identifier raises ValueError naming the counter, and none
        of the call's counters is kept."""
        self.usage_record.add(counters)

    def usage_counters(self) -> Counters:
        """What the stage reported in this attempt so far: numbers as floats, labels as str
        (without the worker's wall_s and cpu_s)."""
        return self.usage_record.counters()

    def on_complete(self, step: TransactionStep) -> None:
        """Run `step(conn)` inside the completing transaction, after the fence held."""
        self._steps.append(step)

    def reference_blobs(self, *keys: str) -> None:
        """Record, with this job's completion, that its run references these blobs: ones the
        stage stored and names only in its output, say (a key in a follow-up job's payload is
        recorded without this). Retention then deletes each with the run's last reference;
        a blob no run references is never deleted. Raises ValueError for a string that is
        not a key pg_pipeline.blobs makes."""
        for key in keys:
            if blob_keys(key) != [key]:
                raise ValueError(f"not a blob key: {key!r}")
        refs = self._blob_refs(keys)

        def insert(conn: psycopg.Connection[Any]) -> None:
            conn.execute(Q["blob_refs_add"], refs)

        if keys:
            self._steps.append(insert)

    def _blob_refs(self, keys: Sequence[str]) -> dict[str, list[Any]]:
        """blob_refs_add's parameters: each of `keys` referenced by this job's run."""
        distinct = sorted(set(keys))
        return {"keys": distinct, "runs": [self.root_id] * len(distinct)}

    @property
    def transaction_steps(self) -> list[TransactionStep]:
        return list(self._steps)

    @property
    def has_steps(self) -> bool:
        """Whether the run added anything to the completing transaction (without a copy)."""
        return bool(self._steps)
