"""Durable waits (issue 23, item 5): a stage ends in "waiting for input", holding no worker,
lease or slot, and resumes exactly once when signalled (in the caller's transaction, the
payload checked against the model's schema) or when its deadline passes."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

import tests.support.apps.waits_app  # noqa: F401  registers the wait stages
from pg_pipeline import (
    Context,
    InvalidSignal,
    NoWaitingStep,
    PermanentError,
    WorkerSettings,
    asignal,
    dashboard,
    enqueue,
    run_output,
    run_status,
    signal,
)
from pg_pipeline.admin import get_wait, list_waits
from pg_pipeline.admin import jobs as admin
from pg_pipeline.admin.runs import cancel_tree
from pg_pipeline.admin.status import read_status
from pg_pipeline.maintenance.retention import prune
from pg_pipeline.maintenance.waits import WaitTimeouts
from pg_pipeline.testing import drain
from tests.integration import workers
from tests.integration.pipeline.dashboard.test_pages import LOCAL
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.apps.waits_app import RUNS
from tests.support.history import make_past_days
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
FAST = WorkerSettings(concurrency=2, poll_interval_s=0.2, reclaim_interval_s=0.5, grace_period_s=5)
APPROVE = {"approved": True, "note": "ship it", "score": 9}


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    # Job ids start again in every test's database.
    RUNS.clear()


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(EFFECTS_DDL)
        yield c


def job_row(conn: Conn, job_id: int) -> dict[str, Any]:
    cur = conn.execute(
        "SELECT status, attempts, leased_until, worker_id, holds_slot, last_error"
        " FROM pipeline.jobs WHERE id = %s",
        (job_id,),
    )
    row = cur.fetchone()
    assert row is not None and cur.description is not None
    return dict(zip([c.name for c in cur.description], row, strict=True))


def status(conn: Conn, job_id: int) -> str:
    return str(job_row(conn, job_id)["status"])


def effects(conn: Conn, job_id: int) -> list[str]:
    rows = conn.execute("SELECT note FROM effects WHERE job_id = %s", (job_id,)).fetchall()
    return [r[0] for r in rows]


def waiting_job(db_url: str, conn: Conn, stage: str = "approve", **doc: Any) -> int:
    """A job of `stage`, run until it waits (in this process, as a worker runs it)."""
    job_id = enqueue(conn, stage, {"name": "contract.pdf", **doc}, tenant_id="acme")
    drained = drain(db_url, stages=[stage])
    assert drained.waiting == [job_id], drained
    return job_id


def run_row(conn: Conn, run_id: int) -> tuple[Any, ...] | None:
    return conn.execute(
        "SELECT status, active, waiting, finished_at IS NOT NULL FROM pipeline.runs"
        " WHERE run_id = %s",
        (run_id,),
    ).fetchone()


# -- through a real worker ------------------------------------------------------------------


def test_a_signal_resumes_the_wait_and_the_stage_returns_its_payload(
    db_url: str, conn: Conn
) -> None:
    job_id = enqueue(conn, "approve", {"name": "contract.pdf"}, tenant_id="acme")
    with workers.running_worker(db_url, ["approve"], FAST):
        wait_for(lambda: status(conn, job_id) == "waiting", what="the job to wait")
        row = job_row(conn, job_id)
        # No lease, no worker, no slot, and the attempt refunded.
        assert (row["leased_until"], row["worker_id"], row["holds_slot"], row["attempts"]) == (
            None,
            None,
            False,
            0,
        )
        task = get_wait(conn, job_id)
        assert task is not None and task.open and task.name == "review"
        assert (task.run_id, task.tenant_id, task.stage) == (job_id, "acme", "approve")
        assert task.proposal == {"approved": True, "note": "looks fine", "score": 5}
        assert task.detail == {"doc": "contract.pdf"}
        assert task.schema["properties"]["approved"]["type"] == "boolean"
        assert [t.job_id for t in list_waits(conn, tenant="acme")] == [job_id]

        assert signal(conn, job_id, "review", APPROVE) == job_id
        wait_for(lambda: status(conn, job_id) == "done", what="the resumed job to finish")

    assert run_output(conn, job_id, "approve") == {"approved": True, "note": "ship it"}
    assert RUNS[(job_id, "before")] == 2 and RUNS[(job_id, "after")] == 1
    assert effects(conn, job_id) == ["reviewed contract.pdf: True ship it"]
    attempts = admin.job_attempts(conn, job_id)
    assert [(a.attempt, a.outcome) for a in attempts] == [(1, "waiting"), (1, "done")]
    resolved = get_wait(conn, job_id, "review")
    assert resolved is not None and resolved.resolution == "signalled"
    assert resolved.payload == APPROVE
    assert list_waits(conn) == []


def test_a_waiting_job_gives_its_tenant_slot_to_the_next_job(db_url: str, conn: Conn) -> None:
    # approve has tenant_cap=1: the second job can only run once the first holds no slot.
    first = enqueue(conn, "approve", {"name": "a"}, tenant_id="acme")
    second = enqueue(conn, "approve", {"name": "b"}, tenant_id="acme")
    with workers.running_worker(db_url, ["approve"], FAST):
        wait_for(
            lambda: status(conn, first) == status(conn, second) == "waiting",
            what="both jobs of the capped tenant to wait",
        )
    load = conn.execute(
        "SELECT coalesce(sum(running), 0) FROM pipeline.tenant_load WHERE tenant_id = 'acme'"
    ).fetchone()
    assert load == (0,)


def test_a_wait_survives_a_restart_and_a_new_worker_finishes_it(db_url: str, conn: Conn) -> None:
    job_id = enqueue(conn, "approve", {"name": "contract.pdf"})
    with workers.running_worker(db_url, ["approve"], FAST):
        wait_for(lambda: status(conn, job_id) == "waiting", what="the job to wait")
    # No worker at all now: the signal lands in the database alone.
    assert signal(conn, job_id, "review", {"approved": False, "note": "typo"}) == job_id
    assert status(conn, job_id) == "queued"
    with workers.running_worker(db_url, ["approve"], FAST):
        wait_for(lambda: status(conn, job_id) == "done", what="a new worker to finish it")
    assert run_output(conn, job_id, "approve") == {"approved": False, "note": "typo"}


def test_concurrent_signals_resume_the_wait_exactly_once(db_url: str, conn: Conn) -> None:
    job_id = waiting_job(db_url, conn)
    barrier = threading.Barrier(8)
    results: list[object] = []
    lock = threading.Lock()

    def send(i: int) -> None:
        with psycopg.connect(db_url, autocommit=True) as own:
            barrier.wait()
            try:
                got: object = signal(own, job_id, "review", {"approved": True, "note": f"#{i}"})
            except NoWaitingStep as exc:
                got = exc
        with lock:
            results.append(got)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert [r for r in results if r == job_id] == [job_id]
    refused = [r for r in results if isinstance(r, NoWaitingStep)]
    assert len(refused) == 7
    assert all("already signalled" in str(r) for r in refused), refused
    with workers.running_worker(db_url, ["approve"], FAST):
        wait_for(lambda: status(conn, job_id) == "done", what="the job to finish")
    assert RUNS[(job_id, "after")] == 1
    assert len(effects(conn, job_id)) == 1


# -- in this process (pg_pipeline.testing.drain runs a job as a worker does) -----------------


def signal_at(db_url: str, job_id: int, barrier: threading.Barrier, got: list[object]) -> None:
    """Signal the job's review once `barrier` lets go; what came of it goes into `got`."""
    with psycopg.connect(db_url, autocommit=True) as own:
        barrier.wait()
        try:
            got.append(signal(own, job_id, "review", APPROVE))
        except NoWaitingStep as exc:
            got.append(exc)


def test_a_signal_races_the_timeout_and_exactly_one_resolves_the_wait(
    db_url: str, conn: Conn, pool: Any
) -> None:
    timeouts = WaitTimeouts(pool)
    outcomes: dict[str, int] = {"signalled": 0, "timed_out": 0}
    for _ in range(10):
        job_id = waiting_job(db_url, conn)
        # The deadline is now: the signal and the timeout service go for it at once.
        conn.execute("UPDATE pipeline.waits SET deadline = now() WHERE job_id = %s", (job_id,))
        barrier = threading.Barrier(2)
        signalled: list[object] = []
        sender = threading.Thread(target=signal_at, args=(db_url, job_id, barrier, signalled))
        sender.start()
        barrier.wait()
        timed_out = timeouts.run_once()
        sender.join(timeout=30)
        task = get_wait(conn, job_id, "review")
        assert task is not None and task.resolution in outcomes
        outcomes[task.resolution] += 1
        assert status(conn, job_id) == "queued"
        won = [s for s in signalled if s == job_id]
        assert len(won) + len([t for t in timed_out if t[0] == job_id]) == 1
        assert bool(won) == (task.resolution == "signalled")
        conn.execute("DELETE FROM pipeline.active_jobs WHERE id = %s", (job_id,))
    assert sum(outcomes.values()) == 10


def test_a_wait_past_its_deadline_fails_the_job_with_the_wait_named(
    db_url: str, conn: Conn, pool: Any
) -> None:
    job_id = waiting_job(db_url, conn, timeout_s=0.05)
    wait_for(lambda: WaitTimeouts(pool).run_once(), what="the wait to time out")
    assert status(conn, job_id) == "queued"
    drained = drain(db_url, stages=["approve"])
    assert list(drained.failed) == [job_id]
    error = job_row(conn, job_id)["last_error"]
    assert "WaitTimedOut: wait 'review' of job" in error and "no signal within 0.05 s" in error
    # Failed for good at once: a retry would time out all the same.
    assert [a.outcome for a in admin.job_attempts(conn, job_id)] == ["waiting", "failed"]
    with pytest.raises(NoWaitingStep, match="timed out at"):
        signal(conn, job_id, "review", APPROVE)


def test_a_signal_and_the_timeout_wake_the_waiting_job_s_stage(
    db_url: str, conn: Conn, pool: Any
) -> None:
    # A job queued again passes no INSERT trigger: the statement that resolves its wait wakes
    # the stage's idle workers itself, or they find the job at their next poll only.
    signalled = waiting_job(db_url, conn)
    timed_out = waiting_job(db_url, conn)
    with psycopg.connect(db_url, autocommit=True) as listener:
        listener.execute("LISTEN pipeline_jobs")
        assert signal(conn, signalled, "review", APPROVE) == signalled
        assert [n.payload for n in listener.notifies(timeout=5, stop_after=1)] == ["approve"]
        conn.execute("UPDATE pipeline.waits SET deadline = now() WHERE job_id = %s", (timed_out,))
        assert WaitTimeouts(pool).run_once() == [(timed_out, "approve", "review")]
        assert [n.payload for n in listener.notifies(timeout=5, stop_after=1)] == ["approve"]


@pytest.mark.parametrize("timeout_s", [0, -5, 1e300])
def test_a_wait_for_called_wrongly_fails_the_job_at_once(
    db_url: str, conn: Conn, timeout_s: float
) -> None:
    job_id = enqueue(conn, "approve", {"name": "x", "timeout_s": timeout_s})
    drained = drain(db_url, stages=["approve"])
    assert list(drained.failed) == [job_id], drained
    error = job_row(conn, job_id)["last_error"]
    assert error.startswith("InvalidWait: ctx.wait_for: a wait's timeout is"), error
    # The stage's code is wrong: a retry would call wait_for the same way, so none is made.
    assert [a.outcome for a in admin.job_attempts(conn, job_id)] == ["failed"]
    assert conn.execute(
        "SELECT count(*) FROM pipeline.waits WHERE job_id = %s", (job_id,)
    ).fetchone() == (0,)


def test_an_answer_the_model_refuses_reopens_the_wait_and_a_good_one_then_finishes(
    db_url: str, conn: Conn
) -> None:
    job_id = waiting_job(db_url, conn, stage="code_review")
    first = get_wait(conn, job_id, "code")
    assert first is not None and first.open and first.last_refusal is None
    assert signal(conn, job_id, "code", {"code": "lower"}) == job_id  # fits the JSON schema
    # The model's validator refuses it: the job waits again, it does not fail.
    assert drain(db_url, stages=["code_review"]).waiting == [job_id]
    row = job_row(conn, job_id)
    assert (row["status"], row["attempts"], row["holds_slot"]) == ("waiting", 0, False)
    error = row["last_error"]
    assert error.startswith(
        f"AnswerRefused: the answer signalled to wait 'code' of job {job_id} fits the JSON"
        " schema of Code but not the model, so the wait is open again"
    ), error
    assert "a code is upper case" in error and 'The answer: {"code": "lower"}' in error
    state = run_status(conn, job_id)
    assert state is not None and state.status == "waiting"
    # The wait is open again, as first recorded: same deadline, the refusal beside it.
    again = get_wait(conn, job_id, "code")
    assert again is not None and again.open and again.payload is None
    assert (again.created_at, again.deadline) == (first.created_at, first.deadline)
    assert again.last_refusal == error
    assert [(t.job_id, t.last_refusal) for t in list_waits(conn)] == [(job_id, error)]
    attempts = admin.job_attempts(conn, job_id)
    assert [(a.outcome, a.error) for a in attempts] == [("waiting", None), ("waiting", error)]

    assert signal(conn, job_id, "code", {"code": "LGTM"}) == job_id
    assert drain(db_url, stages=["code_review"]).done == [job_id]
    assert run_output(conn, job_id, "code_review") == {"approved": True, "note": "LGTM"}
    assert job_row(conn, job_id)["status"] == "done"
    done = get_wait(conn, job_id, "code")
    assert done is not None and done.resolution == "signalled" and done.payload == {"code": "LGTM"}
    assert done.last_refusal is None and list_waits(conn) == []
    # Exactly once: the resolved wait takes no second answer.
    with pytest.raises(NoWaitingStep, match="already signalled"):
        signal(conn, job_id, "code", {"code": "AGAIN"})


def test_a_job_failed_by_a_refused_answer_before_reopening_waits_again_when_retried(
    db_url: str, conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = waiting_job(db_url, conn, stage="code_review")
    assert signal(conn, job_id, "code", {"code": "lower"}) == job_id
    # As before waits reopened: wait_for failed the job for good, its wait kept as signalled.
    with monkeypatch.context() as patched:
        patched.setattr(Context, "wait_for", _fail_for_good)
        assert list(drain(db_url, stages=["code_review"]).failed) == [job_id]
    kept = get_wait(conn, job_id, "code")
    assert kept is not None and kept.resolution == "signalled"
    # A retry runs the stage again, which now finds the answer refused and waits for another.
    assert admin.retry_job(conn, job_id) == admin.Change.DONE
    assert drain(db_url, stages=["code_review"]).waiting == [job_id]
    reopened = get_wait(conn, job_id, "code")
    assert reopened is not None and reopened.open
    assert reopened.last_refusal is not None and "a code is upper case" in reopened.last_refusal
    assert signal(conn, job_id, "code", {"code": "OK"}) == job_id
    assert drain(db_url, stages=["code_review"]).done == [job_id]


def _fail_for_good(self: Context, *args: Any, **kwargs: Any) -> Any:
    raise PermanentError("the answer fits the JSON schema but not the model")


def test_a_stage_that_catches_the_timeout_goes_on_with_a_default(
    db_url: str, conn: Conn, pool: Any
) -> None:
    job_id = waiting_job(db_url, conn, stage="review_or_default", timeout_s=0.05)
    wait_for(lambda: WaitTimeouts(pool).run_once(), what="the wait to time out")
    assert drain(db_url, stages=["review_or_default"]).done == [job_id]
    assert run_output(conn, job_id, "review_or_default") == {
        "approved": False,
        "note": "no answer to 'review'",
    }


def test_a_signal_the_timeout_service_has_not_reached_yet_is_refused_past_the_deadline(
    db_url: str, conn: Conn
) -> None:
    job_id = waiting_job(db_url, conn)
    conn.execute("UPDATE pipeline.waits SET deadline = now() WHERE job_id = %s", (job_id,))
    with pytest.raises(NoWaitingStep, match="its deadline passed"):
        signal(conn, job_id, "review", APPROVE)
    assert status(conn, job_id) == "waiting"


def test_a_payload_that_does_not_fit_is_refused_field_by_field_and_changes_nothing(
    db_url: str, conn: Conn
) -> None:
    job_id = waiting_job(db_url, conn)
    with pytest.raises(InvalidSignal) as refused:
        signal(conn, job_id, "review", {"approved": "maybe", "score": 11})
    message = str(refused.value)
    assert f"wait 'review' of job {job_id} of run {job_id}" in message
    assert "field 'approved': 'maybe' is not of type 'boolean'" in message
    assert "field 'score': 11 is greater than the maximum of 10" in message
    with pytest.raises(InvalidSignal, match="'approved' is a required property"):
        signal(conn, job_id, "review", {})
    with pytest.raises(InvalidSignal, match="cannot be stored as JSON"):
        signal(conn, job_id, "review", {"approved": True, "note": "nul \x00 here"})
    assert status(conn, job_id) == "waiting"
    task = get_wait(conn, job_id)
    assert task is not None and task.open


def test_a_signal_rolled_back_with_its_transaction_resumes_nothing(db_url: str, conn: Conn) -> None:
    job_id = waiting_job(db_url, conn)
    with psycopg.connect(db_url) as tx:
        assert signal(tx, job_id, "review", APPROVE) == job_id
        tx.rollback()
    assert status(conn, job_id) == "waiting"
    assert signal(conn, job_id, "review", APPROVE) == job_id


def test_a_signal_on_a_sqlalchemy_session_commits_with_it(db_url: str, conn: Conn) -> None:
    job_id = waiting_job(db_url, conn)
    engine = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(db_url))
    try:
        with Session(engine) as session:
            assert signal(session, job_id, "review", APPROVE) == job_id
            assert status(conn, job_id) == "waiting"  # not committed yet
            session.commit()
    finally:
        engine.dispose()
    assert status(conn, job_id) == "queued"


def test_asignal_resumes_on_an_async_connection(db_url: str, conn: Conn) -> None:
    job_id = waiting_job(db_url, conn)

    async def send() -> int:
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as aconn:
            return await asignal(aconn, job_id, "review", APPROVE)

    assert asyncio.run(send()) == job_id
    assert status(conn, job_id) == "queued"


def test_a_run_waits_then_runs_again_then_ends_done(db_url: str, conn: Conn) -> None:
    run_id = enqueue(conn, "prepare", {"name": "contract.pdf"})
    drained = drain(db_url, stages=["prepare", "approve"])
    [review_id] = drained.waiting
    assert run_row(conn, run_id) == ("waiting", 1, 1, False)
    state = run_status(conn, run_id)
    assert state is not None and state.status == "waiting" and not state.ended
    assert signal(conn, run_id, "review", APPROVE) == review_id
    assert run_row(conn, run_id) == ("running", 1, 0, False)
    assert drain(db_url, stages=["approve"]).done == [review_id]
    assert run_row(conn, run_id) == ("done", 0, 0, True)


def test_a_standalone_waiting_job_is_a_waiting_run(db_url: str, conn: Conn) -> None:
    job_id = waiting_job(db_url, conn)
    state = run_status(conn, job_id)
    assert state is not None and state.status == "waiting"


def test_cancelling_a_waiting_run_cancels_its_wait(db_url: str, conn: Conn) -> None:
    run_id = enqueue(conn, "prepare", {"name": "contract.pdf"})
    [review_id] = drain(db_url, stages=["prepare", "approve"]).waiting
    assert cancel_tree(conn, run_id, None, reason="withdrawn") == [review_id]
    assert status(conn, review_id) == "cancelled"
    assert run_row(conn, run_id) == ("cancelled", 0, 0, True)
    task = get_wait(conn, review_id)
    assert task is not None and task.resolution == "cancelled"
    with pytest.raises(NoWaitingStep, match="was cancelled at"):
        signal(conn, run_id, "review", APPROVE)


def test_cancelling_a_waiting_job_alone_cancels_its_wait(db_url: str, conn: Conn) -> None:
    job_id = waiting_job(db_url, conn)
    assert admin.cancel_job(conn, job_id) == admin.Change.DONE
    task = get_wait(conn, job_id)
    assert task is not None and task.resolution == "cancelled"
    # Retried by an operator, it waits again, with a fresh deadline.
    assert admin.retry_job(conn, job_id) == admin.Change.DONE
    assert drain(db_url, stages=["approve"]).waiting == [job_id]
    again = get_wait(conn, job_id)
    assert again is not None and again.open
    assert signal(conn, job_id, "review", APPROVE) == job_id


def test_a_stage_waits_on_two_names_one_after_the_other(db_url: str, conn: Conn) -> None:
    job_id = waiting_job(db_url, conn, stage="two_reviews")
    with pytest.raises(NoWaitingStep, match="is not waiting on 'second'; it waits on 'first'"):
        signal(conn, job_id, "second", APPROVE)
    signal(conn, job_id, "first", {"approved": True, "note": "legal"})
    assert drain(db_url, stages=["two_reviews"]).waiting == [job_id]
    signal(conn, job_id, "second", {"approved": True, "note": "finance"})
    assert drain(db_url, stages=["two_reviews"]).done == [job_id]
    assert run_output(conn, job_id, "two_reviews") == {"approved": True, "note": "legal+finance"}


def test_no_waiting_step_says_why(db_url: str, conn: Conn) -> None:
    with pytest.raises(NoWaitingStep, match="no run 999999"):
        signal(conn, 999999, "review", APPROVE)
    job_id = waiting_job(db_url, conn)
    with pytest.raises(NoWaitingStep, match="is not waiting on 'approval'; it waits on 'review'"):
        signal(conn, job_id, "approval", APPROVE)
    with pytest.raises(NoWaitingStep, match=f"no run {job_id} of tenant 'other'$"):
        signal(conn, job_id, "review", APPROVE, tenant="other")
    other = enqueue(conn, "prepare", {"name": "y"})
    elsewhere = f"job {other} of run {job_id} does not wait on 'review'"
    with pytest.raises(NoWaitingStep, match=elsewhere):
        signal(conn, job_id, "review", APPROVE, job_id=other)
    signal(conn, job_id, "review", APPROVE)
    with pytest.raises(NoWaitingStep, match="already signalled at"):
        signal(conn, job_id, "review", APPROVE)
    drain(db_url, stages=["approve"])
    with pytest.raises(NoWaitingStep, match="already signalled"):
        signal(conn, job_id, "review", APPROVE)
    done = enqueue(conn, "prepare", {"name": "x"})
    conn.execute("UPDATE pipeline.active_jobs SET status = 'running' WHERE id = %s", (done,))
    with pytest.raises(NoWaitingStep, match=f"run {done} is not waiting on 'review'"):
        signal(conn, done, "review", APPROVE)


def test_bad_arguments_are_refused_before_anything_is_sent(conn: Conn) -> None:
    with pytest.raises(ValueError, match="non-blank string"):
        signal(conn, 1, "", APPROVE)
    with pytest.raises(TypeError, match="run_id"):
        signal(conn, "1", "review", APPROVE)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit"):
        list_waits(conn, limit=0)


def test_the_status_and_the_job_s_detail_show_the_wait(db_url: str, conn: Conn) -> None:
    job_id = waiting_job(db_url, conn)
    [waiting] = read_status(conn).waiting
    assert (waiting.stage, waiting.name, waiting.waiting) == ("approve", "review", 1)
    assert read_status(conn, tenant="other").waiting == []
    assert read_status(conn).runs["waiting"] == 0  # a job alone has no run row
    detail = admin.get_job(conn, job_id)
    assert detail is not None and detail.status == "waiting"
    assert (
        detail.wait is not None
        and detail.wait.open
        and detail.wait.deadline == waiting.next_deadline
    )
    waiting_jobs = admin.list_jobs(conn, admin.JobFilter(status="waiting"), limit=10)
    assert [j.id for j in waiting_jobs] == [job_id]


def test_a_job_retried_after_its_wait_timed_out_waits_again(
    db_url: str, conn: Conn, pool: Any
) -> None:
    job_id = waiting_job(db_url, conn, timeout_s=0.05)
    wait_for(lambda: WaitTimeouts(pool).run_once(), what="the wait to time out")
    assert list(drain(db_url, stages=["approve"]).failed) == [job_id]
    assert admin.retry_job(conn, job_id) == admin.Change.DONE
    assert drain(db_url, stages=["approve"]).waiting == [job_id]
    assert signal(conn, job_id, "review", APPROVE) == job_id
    assert drain(db_url, stages=["approve"]).done == [job_id]
    # retry --failed alike
    other = waiting_job(db_url, conn, timeout_s=0.05)
    wait_for(lambda: WaitTimeouts(pool).run_once(), what="the wait to time out")
    assert list(drain(db_url, stages=["approve"]).failed) == [other]
    assert admin.retry_failed(conn, stage="approve") == 1
    assert drain(db_url, stages=["approve"]).waiting == [other]


def test_retention_deletes_a_runs_waits_with_it_and_keeps_a_waiting_one(
    db_url: str, conn: Conn
) -> None:
    old, recent, kept = (waiting_job(db_url, conn) for _ in range(3))
    for job_id in (old, recent, kept):
        signal(conn, job_id, "review", APPROVE)
    assert sorted(drain(db_url, stages=["approve"]).done) == [old, recent, kept]
    still = waiting_job(db_url, conn)
    make_past_days(conn, 30)
    for job_id, age in ((old, "30 days"), (recent, "1 hour")):
        conn.execute(
            "UPDATE pipeline.job_history SET finished_at = now() - %s::interval WHERE id = %s",
            (age, job_id),
        )
    # A day dropped whole (old), then runs deleted one by one (recent); kept is newer, and a
    # waiting job is not finished at all.
    assert prune(conn, 60.0).jobs == 2
    left = conn.execute("SELECT job_id FROM pipeline.waits ORDER BY job_id").fetchall()
    assert left == [(kept,), (still,)]


def test_the_dashboard_s_job_page_shows_the_wait_and_offers_to_cancel_it(
    db_url: str, conn: Conn
) -> None:
    job_id = waiting_job(db_url, conn)
    with TestClient(dashboard.app(db_url, token=""), base_url=LOCAL) as client:
        html = client.get(f"/jobs/{job_id}").text
        assert "<h2>Waiting for input</h2>" in html and 'id="wait"' in html
        proposal = re.search(r'<pre id="wait-proposal">(.*?)</pre>', html, re.S)
        assert proposal is not None and "looks fine" in proposal[1]
        assert f"pipeline runs signal {job_id} review" in html
        assert 'id="cancel"' in html
        signal(conn, job_id, "review", {"approved": False, "note": "<b>no</b>"})
        drain(db_url, stages=["approve"])
        html = client.get(f"/jobs/{job_id}").text
        assert "<h2>Wait</h2>" in html and "&lt;b&gt;no&lt;/b&gt;" in html
        listed = client.get("/jobs", params={"status": "waiting"})
        assert listed.status_code == 200
