"""A stage and claimed jobs of it, for the worker's parts tested on their own."""

from __future__ import annotations

from pydantic import BaseModel

from pg_pipeline import Context
from pg_pipeline.stage import Registry, stage
from pg_pipeline.store import ClaimedJob
from pg_pipeline.worker.inflight import InFlight

REG = Registry()
CALLS: list[int] = []


class In(BaseModel):
    n: int = 0


class Out(BaseModel):
    n: int


@stage("counted", registry=REG)
def counted(job: In, ctx: Context) -> Out:
    CALLS.append(job.n)
    return Out(n=job.n)


def claimed(job_id: int) -> ClaimedJob:
    return ClaimedJob(job_id, "counted", None, {"n": job_id}, 0, 1, 5, 60, None, job_id)


def entry(job_id: int) -> InFlight:
    job = claimed(job_id)
    ctx = Context.for_job(job, REG, None)
    return InFlight(job, REG.get("counted"), ctx, deadline=None, isolated=False)
