"""Stages that wait for input (ctx.wait_for), for the wait tests: a review, a review with a
default when it times out, two reviews in a row, and a step before a review (a run of two jobs).

RUNS counts, in this process, how often each job's stage reached each point: before its wait,
and after it (a worker in a thread of the test process shares it). Effects that must count
completions go through record_effect, which commits with the job."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field, field_validator

from pg_pipeline import Context, WaitTimedOut, stage
from tests.support.apps.jobs_app import record_effect

#: (job id, "before" | "after") -> how often the stage got there, in this process
RUNS: Counter[tuple[int, str]] = Counter()


class Doc(BaseModel):
    name: str
    timeout_s: float = 3600.0


class Review(BaseModel):
    approved: bool
    note: str = ""
    score: int = Field(default=5, ge=0, le=10)


class Verdict(BaseModel):
    approved: bool
    note: str


@stage("prepare", lease=30, then="approve")
def prepare(doc: Doc, ctx: Context) -> Doc:
    return doc


# Not "review": the documents app has a stage of that name, and a test process may load both.
@stage("approve", lease=30, tenant_cap=1)
def approve(doc: Doc, ctx: Context) -> Verdict:
    RUNS[(ctx.job_id, "before")] += 1
    answer = ctx.wait_for(
        "review",
        Review,
        timeout=doc.timeout_s,
        proposal=Review(approved=True, note="looks fine"),
        detail={"doc": doc.name},
    )
    RUNS[(ctx.job_id, "after")] += 1
    record_effect(ctx, f"reviewed {doc.name}: {answer.approved} {answer.note}")
    return Verdict(approved=answer.approved, note=answer.note)


@stage("review_or_default", lease=30)
def review_or_default(doc: Doc, ctx: Context) -> Verdict:
    try:
        answer = ctx.wait_for("review", Review, timeout=doc.timeout_s)
    except WaitTimedOut as exc:
        return Verdict(approved=False, note=f"no answer to {exc.name!r}")
    return Verdict(approved=answer.approved, note=answer.note)


@stage("two_reviews", lease=30)
def two_reviews(doc: Doc, ctx: Context) -> Verdict:
    first = ctx.wait_for("first", Review, timeout=doc.timeout_s)
    second = ctx.wait_for("second", Review, timeout=doc.timeout_s)
    return Verdict(approved=first.approved and second.approved, note=f"{first.note}+{second.note}")


class Code(BaseModel):
    code: str

    @field_validator("code")
    @classmethod
    def upper_case(cls, value: str) -> str:
        # A rule the JSON schema cannot say: a signal passes it, the stage's model refuses it.
        if not value.isupper():
            raise ValueError("a code is upper case")
        return value


@stage("code_review", lease=30)
def code_review(doc: Doc, ctx: Context) -> Verdict:
    answer = ctx.wait_for("code", Code, timeout=doc.timeout_s)
    return Verdict(approved=True, note=answer.code)
