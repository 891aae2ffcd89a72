"""A two-stage chain whose second stage's code version comes from the environment, so that a
test can start a worker at a new version and rerun a finished run from that stage:
vread -> vextract. VERSIONS_APP_EXTRACT (default "1") is vextract's version and changes what
it extracts."""

from __future__ import annotations

import os

from pydantic import BaseModel

from pg_pipeline import Context, stage

EXTRACT_VERSION = os.environ.get("VERSIONS_APP_EXTRACT", "1")


class Invoice(BaseModel):
    text: str


class Fields(BaseModel):
    vendor: str
    total: float
    currency: str


@stage("vread", then="vextract", lease=30)
def vread(job: Invoice, ctx: Context) -> Invoice:
    return Invoice(text=job.text.strip())


@stage("vextract", version=EXTRACT_VERSION, lease=30)
def vextract(job: Invoice, ctx: Context) -> Fields:
    vendor, total = job.text.split(":")
    # Version 2 reads the cents the first one dropped.
    amount = float(total) if EXTRACT_VERSION != "1" else float(int(float(total)))
    return Fields(vendor=vendor, total=amount, currency="EUR")
