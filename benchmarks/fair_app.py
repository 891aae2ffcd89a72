"""The stage the fairness benchmark runs: a short nap, so that a few workers are the bottleneck
and every tenant stays backlogged for the whole window."""

from __future__ import annotations

import time

from pydantic import BaseModel

from pg_pipeline import Context, stage


class Nap(BaseModel):
    ms: float = 2.0


@stage("bench_nap", lease=60)
def bench_nap(job: Nap, ctx: Context) -> None:
    time.sleep(job.ms / 1000)
