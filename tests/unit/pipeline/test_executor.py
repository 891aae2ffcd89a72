"""The executor: a run into an outcome, without a database."""

from __future__ import annotations

from typing import Any

import psycopg
from pydantic import BaseModel, Field

from pg_pipeline import Context, Registry, stage
from pg_pipeline.executor import run_job
from pg_pipeline.outcomes import Lost
from tests.unit.pipeline.worker.jobs import CALLS, REG, claimed

CHAIN = Registry()


class Order(BaseModel):
    n: int


class Count(BaseModel):
    total: int


class Bill(BaseModel):
    # A bound the JSON schemas do not compare (pg_pipeline.schema_fit): the pair registers, and
    # an output under it is refused when the job runs.
    total: int = Field(gt=100)


@stage("count_then_bill", then="bill", registry=CHAIN)
def count_then_bill(job: Order, ctx: Context) -> Count:
    return Count(total=job.n)


@stage("count_then_tally", then="tally", registry=CHAIN)
def count_then_tally(job: Order, ctx: Context) -> Count:
    return Count(total=job.n)


@stage("bill", registry=CHAIN)
def bill(job: Bill, ctx: Context) -> None:
    return None


@stage("tally", registry=CHAIN)
def tally(job: Count, ctx: Context) -> None:
    return None


def run_chained(name: str) -> tuple[object, Context]:
    from pg_pipeline.executor import run_job
    from pg_pipeline.store import ClaimedJob

    job = ClaimedJob(7, name, None, {"n": 3}, 0, 1, 5, 60, None, 7)
    ctx = Context(
        job_id=7,
        stage=name,
        attempt=1,
        max_attempts=5,
        tenant_id=None,
        parent_id=None,
        registry=CHAIN,
    )
    return run_job(CHAIN.get(name), job, ctx), ctx


def test_an_output_that_does_not_fit_the_next_stage_fails_the_job_for_good() -> None:
    from pg_pipeline.outcomes import Raised, Succeeded

    outcome, ctx = run_chained("count_then_bill")
    assert isinstance(outcome, Raised)
    assert outcome.permanent
    assert "invalid payload for stage 'bill'" in outcome.message
    assert ctx.transaction_steps == []

    outcome, ctx = run_chained("count_then_tally")
    assert isinstance(outcome, Succeeded)
    assert (outcome.output, outcome.part, outcome.reused) == (Count(total=3), None, False)
    assert len(outcome.steps) == 1  # the tally job, inserted with the completion


def test_an_outage_before_the_run_gives_the_claim_up_without_running_the_stage() -> None:
    def unreachable(job_id: int) -> Any:
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    CALLS.clear()
    job = claimed(3)
    outcome = run_job(REG.get("counted"), job, Context.for_job(job, REG, None), unreachable)
    assert isinstance(outcome, Lost) and "database unavailable" in outcome.reason
    assert CALLS == []
