"""Stages whose payloads name blobs: what retention's blob references are made from."""

from __future__ import annotations

from pydantic import BaseModel

from pg_pipeline import Context, stage


class Upload(BaseModel):
    blob_key: str
    #: a blob this stage "made": named by a follow-up job in the run
    derived: str | None = None
    #: fan out one page per key, each naming it, then a note naming `then_key`
    pages: list[str] = []
    then_key: str | None = None


class Note(BaseModel):
    blob_key: str


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
