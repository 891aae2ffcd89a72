"""ctx.wait_for and the executor without a database: what a run that waits ends as, whatever
the stage wraps around the call."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from pg_pipeline import Context, Registry, stage
from pg_pipeline.errors import Waiting, WaitTimedOut
from pg_pipeline.executor import run_job
from pg_pipeline.outcomes import Raised, Succeeded, WaitingForInput
from pg_pipeline.store import ClaimedJob
from pg_pipeline.waits import WaitRecord, wait_request

REG = Registry()
T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


class Doc(BaseModel):
    name: str = "a.pdf"


class Answer(BaseModel):
    approved: bool
    note: str = ""


class Verdict(BaseModel):
    approved: bool


@stage("asks", registry=REG)
def asks(doc: Doc, ctx: Context) -> Verdict:
    ctx.enqueue("asks", {"name": "follow-up made before the wait"})
    try:
        answer = ctx.wait_for("review", Answer, timeout=timedelta(hours=1), detail={"doc": 1})
    except Exception:  # a stage's broad except must not swallow the wait
        return Verdict(approved=False)
    return Verdict(approved=answer.approved)


@stage("asks_async", registry=REG)
async def asks_async(doc: Doc, ctx: Context) -> Verdict:
    answer = ctx.wait_for("review", Answer, timeout=60)
    return Verdict(approved=answer.approved)


def run(name: str, record: WaitRecord | None) -> tuple[object, Context]:
    job = ClaimedJob(7, name, None, {}, 0, 1, 5, 60, None, 7)

    def read_wait(job_id: int, wait: str) -> WaitRecord | None:
        assert (job_id, wait) == (7, "review")
        return record

    ctx = Context.for_job(job, REG, None, read_wait)
    return run_job(REG.get(name), job, ctx), ctx


@pytest.mark.parametrize("name", ["asks", "asks_async"])
def test_an_unresolved_wait_ends_the_run_in_waiting_past_a_broad_except(name: str) -> None:
    outcome, _ = run(name, None)
    assert isinstance(outcome, WaitingForInput)
    request = outcome.request
    assert (request.name, request.timeout_s) == ("review", 3600.0 if name == "asks" else 60.0)
    assert json.loads(request.schema)["required"] == ["approved"]
    # The follow-up enqueued before the wait is not part of the outcome: the stage runs again.


def test_a_signalled_wait_returns_its_payload_as_the_model() -> None:
    record = WaitRecord("signalled", {"approved": True, "note": "ok"}, T0, T0, T0)
    outcome, _ = run("asks", record)
    assert isinstance(outcome, Succeeded) and outcome.output == Verdict(approved=True)
    assert len(outcome.steps) == 1  # the follow-up, once


def test_a_timed_out_wait_fails_for_good_naming_the_wait_unless_caught() -> None:
    record = WaitRecord("timed_out", None, T0 + timedelta(seconds=90), T0, T0)
    outcome, _ = run("asks_async", record)
    assert isinstance(outcome, Raised) and outcome.permanent
    assert "WaitTimedOut: wait 'review' of job 7 timed out: no signal within 90 s" in (
        outcome.message
    )
    # asks catches Exception, and WaitTimedOut is one: it goes on with its default.
    outcome, _ = run("asks", record)
    assert isinstance(outcome, Succeeded) and outcome.output == Verdict(approved=False)


def test_a_cancelled_wait_waits_again() -> None:
    outcome, _ = run("asks", WaitRecord("cancelled", None, T0, T0, T0))
    assert isinstance(outcome, WaitingForInput)


def test_without_a_database_a_wait_never_resolves() -> None:
    ctx = Context(
        job_id=1, stage="asks", attempt=1, max_attempts=1, tenant_id=None, parent_id=None,
        registry=REG,
    )  # fmt: skip
    with pytest.raises(Waiting):
        ctx.wait_for("review", Answer, timeout=1)


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (("", Answer, 1), ValueError, "non-blank"),
        (("x" * 101, Answer, 1), ValueError, "at most 100"),
        (("review", dict, 1), TypeError, "pydantic model class"),
        (("review", Answer, 0), ValueError, "above 0"),
        (("review", Answer, float("inf")), ValueError, "above 0"),
        (("review", Answer, True), ValueError, "timeout"),
        (("review", Answer, timedelta(seconds=-1)), ValueError, "above 0"),
    ],
)
def test_a_wait_s_arguments_are_checked(args: tuple[Any, ...], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        wait_request(*args, None, None)


def test_a_proposal_or_detail_that_cannot_be_stored_is_refused_at_the_call() -> None:
    with pytest.raises(ValueError, match="the proposal of wait 'review' cannot be stored"):
        wait_request("review", Answer, 1, {"note": "a\x00b"}, None)
    with pytest.raises(TypeError, match="detail is a mapping"):
        wait_request("review", Answer, 1, None, ["not", "a", "mapping"])  # type: ignore[arg-type]
    request = wait_request("review", Answer, 1, Answer(approved=True), {"at": T0})
    assert json.loads(request.proposal or "") == {"approved": True, "note": ""}
    assert json.loads(request.detail or "") == {"at": "2026-12-02T12:00:00Z"}


def test_waiting_is_no_exception_a_stage_catches_by_accident() -> None:
    assert not issubclass(Waiting, Exception)
    assert issubclass(WaitTimedOut, Exception)
