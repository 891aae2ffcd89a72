"""A small fan-out/fan-in pipeline: split -> page x N -> assemble -> publish."""

from __future__ import annotations

from pydantic import BaseModel

from pg_pipeline import Context, PermanentError, stage
from tests.support.apps.jobs_app import record_effect


class Doc(BaseModel):
    pages: int
    fail_page: int | None = None


class Page(BaseModel):
    page: int
    fail: bool = False


class PageText(BaseModel):
    page: int
    text: str


class Assemble(BaseModel):
    pages: int


class Assembled(BaseModel):
    text: str


@stage("split", lease=30)
def split(job: Doc, ctx: Context) -> None:
    pages = [{"page": i, "fail": i == job.fail_page} for i in range(job.pages)]
    ctx.fan_out("page", pages, then=("assemble", {"pages": job.pages}))


@stage("page", lease=30, part=lambda p: p.page, max_attempts=2, backoff_base=0.01)
def page(job: Page, ctx: Context) -> PageText:
    if job.fail:
        raise PermanentError(f"page {job.page} is unreadable")
    record_effect(ctx, f"page {job.page}")
    return PageText(page=job.page, text=f"p{job.page}")


@stage("assemble", lease=30, then="publish")
def assemble(job: Assemble, ctx: Context) -> Assembled:
    texts = [output["text"] for _, output in ctx.outputs("page")]
    if len(texts) != job.pages:
        raise RuntimeError(f"expected {job.pages} pages, found {len(texts)}")
    return Assembled(text=" ".join(texts))


@stage("publish", lease=30)
def publish(job: Assembled, ctx: Context) -> None:
    record_effect(ctx, job.text)
