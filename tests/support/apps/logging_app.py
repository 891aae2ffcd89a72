"""Stages that log, in a runner thread and alone in a child process, for the worker's logs."""

from __future__ import annotations

import logging

from pydantic import BaseModel

from pg_pipeline import Context, stage

log = logging.getLogger(__name__)


class Item(BaseModel):
    item: str


@stage("chatty", lease=30, max_attempts=2, backoff_base=0.05, backoff_cap=0.05)
def chatty(job: Item, ctx: Context) -> None:
    log.info("resizing %s", job.item)
    if ctx.attempt == 1:
        raise ConnectionError(f"upstream down for {job.item}")


@stage("chatty_alone", lease=30, max_attempts=1, isolation="process")
def chatty_alone(job: Item, ctx: Context) -> None:
    log.info("alone with %s", job.item)
    raise KeyError(job.item)
