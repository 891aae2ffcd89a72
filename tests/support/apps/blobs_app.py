"""Stages whose payloads name blobs: what retention's blob references are made from."""

from __future__ import annotations

from pydantic import BaseModel

from pg_pipeline import Context, stage
from pg_pipeline.blobs import content_key


class Upload(BaseModel):
    blob_key: str
    #: a blob this stage "made": named by a follow-up job in the run
    derived: str | None = None
    #: fan out one page per key, each naming it, then a note naming `then_key`
    pages: list[str] = []
    then_key: str | None = None


class Note(BaseModel):
    blob_key: str


class Made(BaseModel):
    blob_key: str


class Render(BaseModel):
    digest: str  #: the sha256 of a blob the stage "stores" and names only in its output


@stage("blob_upload")
def upload(job: Upload, ctx: Context) -> None:
    if job.derived is not None:
        ctx.enqueue("blob_note", {"blob_key": job.derived})
    if job.pages:
        then = None if job.then_key is None else ("blob_note", {"blob_key": job.then_key})
        ctx.fan_out("blob_note", [{"blob_key": key} for key in job.pages], then=then)


@stage("blob_note")
def note(job: Note, ctx: Context) -> None:
    pass


@stage("blob_render")
def render(job: Render, ctx: Context) -> Made:
    key = content_key(job.digest)
    ctx.reference_blobs(key)
    return Made(blob_key=key)
