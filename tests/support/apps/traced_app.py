"""Stages of tests/integration/pipeline/test_tracing.py that a child process must import by
name: a job run alone (isolation="process") that enqueues a follow-up."""

from __future__ import annotations

from pydantic import BaseModel

from pg_pipeline import Context, stage


class Nothing(BaseModel):
    pass


@stage("traced_alone", lease=30, isolation="process")
def traced_alone(job: Nothing, ctx: Context) -> None:
    ctx.enqueue("traced_after", {})


@stage("traced_after", lease=30)
def traced_after(job: Nothing, ctx: Context) -> None:
    pass
