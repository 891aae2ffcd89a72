"""The stages the benchmarks run: no work at all, so the queue itself is what is measured."""

from __future__ import annotations

from pydantic import BaseModel

from pg_pipeline import Context, stage


class Empty(BaseModel):
    i: int = 0


@stage("bench_noop", lease=60)
def bench_noop(job: Empty, ctx: Context) -> None:
    return None
