"""decide(): every outcome of a run, and the one transition it becomes. No database."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from pydantic import BaseModel

from pg_pipeline import Context
from pg_pipeline.outcomes import (
    LEFT_DELAY_S,
    NOT_RUN_DELAY_S,
    Complete,
    Crashed,
    Discard,
    Fail,
    GiveBack,
    Lost,
    LostWhileRunning,
    NotRun,
    Outcome,
    Raised,
    Retry,
    Succeeded,
    TimedOut,
    Transition,
    Unfit,
    Wait,
    WaitingForInput,
    clean_error,
    decide,
)
from pg_pipeline.stage import Registry, StageSpec, stage
from pg_pipeline.store import ClaimedJob
from pg_pipeline.waits import WaitRequest

REG = Registry()


class In(BaseModel):
    n: int = 0


class Out(BaseModel):
    text: str = ""
    score: float = 0.0


@stage("thing", registry=REG, max_attempts=3, backoff_base=10, backoff_cap=1800)
def thing(job: In, ctx: Context) -> Out:
    return Out()


SPEC: StageSpec = REG.get("thing")


def claimed(attempts: int, max_attempts: int = 3) -> ClaimedJob:
    return ClaimedJob(1, "thing", None, {}, 0, attempts, max_attempts, 60, None, 1, 4, False)


def step(conn: Any) -> None:
    return None


WAIT = WaitRequest("review", '{"type": "object"}', 60.0, '{"ok": true}', None)

CASES: list[tuple[str, int, Outcome, Transition | type]] = [
    ("success stores its output", 1, Succeeded(Out(text="hi")), Complete),
    ("a plain success is batched", 1, Succeeded(None), Complete(None, None, ())),
    ("a reused output writes nothing new", 2, Succeeded(Out(), reused=True), Complete()),
    ("a lost claim writes nothing", 1, Lost("lease lost"), Discard("lease lost")),
    ("a lost claim writes nothing, even on its last attempt", 3, Lost("x"), Discard("x")),
    (
        "a success after the claim was lost writes nothing",
        1,
        LostWhileRunning(Succeeded(Out(text="late"))),
        Discard("the claim was lost while running"),
    ),
    (
        "an error after the claim was lost writes nothing, even on the last attempt",
        3,
        LostWhileRunning(Raised("ConnectionError: down", False)),
        Discard("the claim was lost while running"),
    ),
    (
        "a timeout after the claim was lost is still charged",
        1,
        LostWhileRunning(TimedOut(1)),
        Retry,
    ),
    (
        "a crash after the claim was lost on the final attempt still fails the job",
        3,
        LostWhileRunning(Crashed("killed by SIGKILL")),
        Fail("crashed its worker process (killed by SIGKILL) while running in isolation"),
    ),
    ("a retryable error retries", 1, Raised("ConnectionError: down", False), Retry),
    (
        "a retryable error on the final attempt fails",
        3,
        Raised("ConnectionError: down", False),
        Fail("ConnectionError: down"),
    ),
    ("a permanent error fails at once", 1, Raised("bad PDF", True), Fail("bad PDF")),
    ("a timeout retries", 1, TimedOut(2.5), Retry),
    ("a timeout on the final attempt fails", 3, TimedOut(2.5), Fail("timed out after 2.5 s")),
    ("a crash in isolation is charged and retried", 2, Crashed("killed by SIGKILL"), Retry),
    (
        "a crash in isolation on the final attempt fails with the crash",
        3,
        Crashed("killed by SIGKILL"),
        Fail("crashed its worker process (killed by SIGKILL) while running in isolation"),
    ),
    (
        "a job no child process could run is given back, uncharged, even on its last attempt",
        3,
        NotRun("no child process could run it: the fork server died"),
        GiveBack(NOT_RUN_DELAY_S, "no child process could run it: the fork server died"),
    ),
    (
        "a payload this worker rejects fails at once, with the reason, even on a first attempt",
        1,
        Unfit("payload no longer valid: pages"),
        Fail("payload no longer valid: pages"),
    ),
    (
        "a payload left for a worker running another version is given back, uncharged",
        3,
        Unfit("payload no longer valid: pages", left="left for a worker running another one"),
        GiveBack(LEFT_DELAY_S, "left for a worker running another one"),
    ),
    (
        "a give-back after the claim was lost writes nothing",
        1,
        LostWhileRunning(NotRun("no child")),
        Discard("the claim was lost while running"),
    ),
    (
        "an output with a NUL fails, naming the field",
        1,
        Succeeded(Out(text="a\x00b")),
        Fail("output cannot be stored: NUL character in field 'text'"),
    ),
    ("a run ending in a wait waits", 1, WaitingForInput(WAIT), Wait(WAIT)),
    (
        "a run ending in a wait on its final attempt waits too: waiting is never charged",
        3,
        WaitingForInput(WAIT),
        Wait(WAIT),
    ),
    (
        "a wait after the claim was lost writes nothing",
        1,
        LostWhileRunning(WaitingForInput(WAIT)),
        Discard("the claim was lost while running"),
    ),
]


@pytest.mark.parametrize(
    ("case", "attempts", "outcome", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_decide_maps_each_outcome_to_one_transition(
    case: str, attempts: int, outcome: Outcome, expected: Transition | type
) -> None:
    got = decide(SPEC, claimed(attempts), outcome, random.Random(7))
    if isinstance(expected, type):
        assert isinstance(got, expected)
    else:
        assert got == expected


def test_a_success_carries_its_output_as_json_and_its_steps_in_order() -> None:
    got = decide(SPEC, claimed(1), Succeeded(Out(text="x", score=1.5), (step,), part=3))
    assert got == Complete({"text": "x", "score": 1.5}, 3, (step,))
    assert not got.plain


def test_an_output_with_nan_fails_instead_of_reaching_jsonb() -> None:
    got = decide(SPEC, claimed(1), Succeeded(Out(score=math.nan)))
    assert isinstance(got, Fail)
    assert got.error.startswith("output cannot be stored: NaN") and "score" in got.error


def test_retry_delays_grow_with_attempts_and_stay_capped() -> None:
    rng = random.Random(1)
    delays = []
    for attempt in (1, 2):
        got = decide(SPEC, claimed(attempt, max_attempts=50), Raised("e", False), rng)
        assert isinstance(got, Retry)
        delays.append(got.delay_s)
    assert 5 <= delays[0] < 15 and 10 <= delays[1] < 30
    late = decide(SPEC, claimed(40, max_attempts=50), Raised("e", False), rng)
    assert isinstance(late, Retry) and late.delay_s <= 1800


def test_error_text_is_made_storable_and_safe() -> None:
    text = clean_error("boom\x00 at postgresql://app:hunter2@db/x " + "y" * 10_000)
    assert "\x00" not in text and "hunter2" not in text
    assert len(text) <= 4000
    got = decide(SPEC, claimed(1), Raised("bad\x00byte", True))
    assert got == Fail("bad\\x00byte")


@pytest.mark.parametrize(
    ("attempts", "outcome", "cause"),
    [
        (1, Raised("ValueError: x", False), "raised"),
        (3, Raised("ValueError: x", False), "raised"),
        (1, TimedOut(2.5), "timed out"),
        (3, TimedOut(2.5), "timed out"),
        (1, Crashed("killed by SIGKILL"), "crashed"),
        (1, LostWhileRunning(Crashed("killed by SIGKILL")), "crashed"),
        (1, Unfit("payload no longer valid: n"), "unfit"),
        (1, Unfit("payload no longer valid: n", left="another version runs"), "left"),
        (1, NotRun("no child process"), "not run"),
        (1, Succeeded(Out(score=math.nan)), "unstorable"),
    ],
)
def test_a_retry_a_failure_or_a_give_back_says_its_cause_for_the_log(
    attempts: int, outcome: Outcome, cause: str
) -> None:
    got = decide(SPEC, claimed(attempts), outcome, random.Random(7))
    assert isinstance(got, Retry | Fail | GiveBack) and got.cause == cause
