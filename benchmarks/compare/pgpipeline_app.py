"""The stage the wake-latency figure runs on pg-pipeline: records enqueue → stage start."""

from __future__ import annotations

from pydantic import BaseModel

from benchmarks.compare.child_common import Latencies
from pg_pipeline import Context, stage

LATENCIES = Latencies()


class Sent(BaseModel):
    t: float  # time.time() in the enqueuing process, just before its enqueue call


@stage("bench_wake", lease=60)
def bench_wake(job: Sent, ctx: Context) -> None:
    LATENCIES.record(job.t)
