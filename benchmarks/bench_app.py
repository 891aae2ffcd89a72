"""The stages the benchmarks run: no work at all, so the queue itself is what is measured."""

from __future__ import annotations

from pydantic import BaseModel

from pg_pipeline import Context, Limit, stage


class Empty(BaseModel):
    i: int = 0


@stage("bench_noop", lease=60)
def bench_noop(job: Empty, ctx: Context) -> None:
    return None


#: the limit bench_limited's jobs are charged to, one unit per job, per tenant (benchmarks/flow.py)
BENCH_LIMIT = "bench-units"


@stage("bench_limited", lease=60, limits=[Limit(BENCH_LIMIT, key="tenant")])
def bench_limited(job: Empty, ctx: Context) -> None:
    return None
