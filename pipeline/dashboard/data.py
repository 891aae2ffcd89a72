"""What the dashboard's pages put together from the operators' read model (pipeline/admin/):
each page reads in one snapshot, and the reads themselves, scoped to the page's tenant, live
there, as `pipeline status` and `pipeline jobs` read them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg

from pipeline.admin.runs import Run
from pipeline.admin.status import (
    Minute,
    Status,
    TenantCapUse,
    begin_snapshot,
    read_throughput,
    read_worker_stages,
    snapshot_status,
)
from pipeline.admin.tenants import NoisyTenant, noisiest_tenants, queued_per_tenant, tenant_loads

#: A page's statements are cancelled by the server after this long: a dashboard gives up
#: rather than pile onto a database that is already struggling.
PAGE_TIMEOUT_MS = 5_000
TENANTS_SHOWN = 50


def begin_read(conn: psycopg.Connection[Any]) -> datetime:
    """First in a page's transaction: one read-only snapshot, each statement bounded."""
    return begin_snapshot(conn, PAGE_TIMEOUT_MS)


@dataclass(frozen=True)
class Overview:
    status: Status
    throughput: list[Minute]
    #: (stage, running jobs) per live worker; None when opened for one tenant: workers serve
    #: every tenant
    worker_stages: dict[UUID, list[tuple[str, int]]] | None


def read_overview(conn: psycopg.Connection[Any], tenant: str | None) -> Overview:
    with conn.transaction():
        status = snapshot_status(conn, begin_read(conn), tenant=tenant)
        throughput = read_throughput(conn, tenant)
        if tenant is not None:
            return Overview(status, throughput, None)
        return Overview(
            status, throughput, read_worker_stages(conn, [w.id for w in status.workers])
        )


@dataclass(frozen=True)
class Tenants:
    loads: list[TenantCapUse]
    queued: list[tuple[str, int]]
    noisy: list[NoisyTenant]


def read_tenants(conn: psycopg.Connection[Any], tenant: str | None) -> Tenants:
    with conn.transaction():
        begin_read(conn)
        return Tenants(
            tenant_loads(conn, tenant, limit=TENANTS_SHOWN),
            queued_per_tenant(conn, tenant, TENANTS_SHOWN),
            noisiest_tenants(conn, tenant, TENANTS_SHOWN),
        )


@dataclass(frozen=True)
class Extraction:
    """An output that explains itself: fields, and an `evidence` object per field with its
    confidence (what the documents app's extract stage stores)."""

    stage: str
    job_id: int
    #: (field, value, evidence) in the output's order; evidence {} when it gives none
    fields: list[tuple[str, Any, dict[str, Any]]]
    warnings: list[str]


def outputs(
    run: Run, field_order: Callable[[str], Sequence[str] | None]
) -> tuple[list[Extraction], list[tuple[str, int, Any]]]:
    """A run's outputs as the extractions among them, and the others as they are.
    field_order(stage): the names of the stage's output fields in the order to show them."""
    extractions: list[Extraction] = []
    plain: list[tuple[str, int, Any]] = []
    for stage, job_id, output in run.outputs:
        found = _extraction(stage, job_id, output, field_order(stage))
        if found is not None:
            extractions.append(found)
        else:
            plain.append((stage, job_id, output))
    return extractions, plain


def _extraction(
    stage: str, job_id: int, output: Any, order: Sequence[str] | None = None
) -> Extraction | None:
    """The fields in `order` (the output model's), then any the model does not name in the
    stored order: jsonb keeps keys shortest first, which reads as no order at all."""
    if not isinstance(output, dict) or not isinstance(output.get("evidence"), dict):
        return None
    evidence: dict[str, Any] = output["evidence"]
    skip = {"evidence", "warnings", "extractor"}
    known = [n for n in order or () if n in output]
    names = known + [n for n in output if n not in set(known)]
    fields: list[tuple[str, Any, dict[str, Any]]] = []
    for name in names:
        if name not in skip:
            why = evidence.get(name)
            fields.append((str(name), output[name], why if isinstance(why, dict) else {}))
    warnings = output.get("warnings")
    return Extraction(
        stage,
        job_id,
        fields,
        [str(w) for w in warnings] if isinstance(warnings, list) else [],
    )
